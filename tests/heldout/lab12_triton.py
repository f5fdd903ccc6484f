"""Held-out answers to lab 12 (Triton), written from the lab text and the reference solutions'
code only, without the checker in view (see ``tests/heldout/__init__.py``).

Wrong answers are the reference kernel (or a correct variant) with one learner's mistake put in;
``_edit`` fails loudly if a mistake no longer applies to the text it edits."""

from heldout import Blind

HEADER = """\
import torch
import triton
import triton.language as tl

"""


def _edit(source: str, *pairs: str) -> str:
    """``source`` with each (old, new) pair replaced; every ``old`` must occur exactly once."""
    assert len(pairs) % 2 == 0
    for old, new in zip(pairs[::2], pairs[1::2], strict=True):
        if source.count(old) != 1:
            raise ValueError(f"{old!r} occurs {source.count(old)} times, not once")
        source = source.replace(old, new)
    return source


# ---------------------------------------------------------------- exercise 1: vector add
ADD = (
    HEADER
    + """\
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
"""
)

ADD_OK_HELPER = (
    HEADER
    + """\
@triton.jit
def _masked_block(ptr, start, n, BLOCK: tl.constexpr):
    idx = start + tl.arange(0, BLOCK)
    return tl.load(ptr + idx, mask=idx < n, other=0.0)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    start = tl.program_id(0) * BLOCK_SIZE
    total = _masked_block(x_ptr, start, n_elements, BLOCK_SIZE)
    total += _masked_block(y_ptr, start, n_elements, BLOCK_SIZE)
    idx = start + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + idx, total, mask=n_elements > idx)
"""
)

ADD_OK_INLINE = (
    HEADER
    + """\
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    block = tl.program_id(0)
    lanes = tl.arange(0, BLOCK_SIZE) + block * BLOCK_SIZE
    inside = lanes <= n_elements - 1
    tl.store(
        out_ptr + lanes,
        tl.load(y_ptr + lanes, mask=inside) + tl.load(x_ptr + lanes, mask=inside),
        mask=inside,
    )
"""
)

# ---------------------------------------------------------------- exercise 2: softmax
SOFTMAX = (
    HEADER
    + """\
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
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
"""
)

SOFTMAX_OK_THREE_PASS = (
    HEADER
    + """\
@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # three passes: the row's maximum, then the sum, then the output (no rescaling needed)
    row = tl.program_id(0)
    row_max = float("-inf")
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=float("-inf"))
        row_max = tl.maximum(row_max, tl.max(x, axis=0))
    denom = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=float("-inf"))
        denom += tl.sum(tl.exp(x - row_max), axis=0)
    inv = 1.0 / denom
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=float("-inf"))
        tl.store(out_ptr + row * out_row_stride + cols, tl.exp(x - row_max) * inv, mask=cols < n_cols)
"""
)

SOFTMAX_OK_WHERE = (
    HEADER
    + """\
@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    src = x_ptr + pid.to(tl.int64) * x_row_stride
    dst = out_ptr + pid.to(tl.int64) * out_row_stride
    running_max = tl.full((), float("-inf"), tl.float32)
    running_sum = tl.zeros((), tl.float32)
    for c0 in range(0, n_cols, BLOCK_SIZE):
        offs = c0 + tl.arange(0, BLOCK_SIZE)
        valid = offs < n_cols
        vals = tl.where(valid, tl.load(src + offs, mask=valid, other=0.0), float("-inf"))
        new_max = tl.maximum(running_max, tl.max(vals, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max)
        running_sum += tl.sum(tl.exp(vals - new_max), axis=0)
        running_max = new_max
    for c0 in range(0, n_cols, BLOCK_SIZE):
        offs = c0 + tl.arange(0, BLOCK_SIZE)
        valid = offs < n_cols
        vals = tl.load(src + offs, mask=valid, other=0.0)
        tl.store(dst + offs, tl.exp(vals - running_max) / running_sum, mask=valid)
"""
)

# ---------------------------------------------------------------- exercise 3: layer norm
LAYERNORM = (
    HEADER
    + """\
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
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
"""
)

LAYERNORM_OK_RSQRT = (
    HEADER
    + """\
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr
):
    r = tl.program_id(0)
    j = tl.arange(0, BLOCK_SIZE)
    real = j < n_cols
    x = tl.load(x_ptr + r * x_row_stride + j, mask=real, other=0.0).to(tl.float32)
    mu = tl.sum(x, axis=0) * (1.0 / n_cols)
    centred = x - mu
    sq = tl.where(real, centred * centred, 0.0)
    inv_std = tl.rsqrt(tl.sum(sq, axis=0) / n_cols + eps)
    gamma = tl.load(w_ptr + j, mask=real, other=1.0)
    beta = tl.load(b_ptr + j, mask=real, other=0.0)
    y = gamma * (centred * inv_std) + beta
    tl.store(out_ptr + r * out_row_stride + j, y, mask=real)
"""
)

LAYERNORM_OK_TWO_SUMS = (
    HEADER
    + """\
@triton.jit
def _row_stats(x, mask, n):
    mean = tl.sum(x, axis=0) / n
    dev = tl.where(mask, x - mean, 0.0)
    return mean, tl.sum(dev * dev, axis=0) / n


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
    mean, var = _row_stats(x, mask, n_cols)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    out = (x - mean) / tl.sqrt(var + eps) * w + b
    tl.store(out_ptr + row * out_row_stride + cols, out, mask=mask)
"""
)

# ---------------------------------------------------------------- exercise 4: matmul
MATMUL = (
    HEADER
    + """\
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
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
"""
)

MATMUL_OK_GLOBAL_K = (
    HEADER
    + """\
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BLOCK_K)):
        rk = k0 * BLOCK_K + tl.arange(0, BLOCK_K)  # global k index, recomputed every step
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
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=out_mask)
"""
)

MATMUL_OK_HELPER = (
    HEADER
    + """\
@triton.jit
def _epilogue(acc, ACTIVATION: tl.constexpr):
    if ACTIVATION == "relu":
        return tl.maximum(acc, 0.0)
    return acc


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
    pid_n = tl.program_id(axis=1)
    pid_m = tl.program_id(axis=0)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k = 0
    while k < K:
        offs_k = k + tl.arange(0, BLOCK_K)
        a = tl.load(
            a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
            mask=(offs_m[:, None] < M) & (offs_k[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
            mask=(offs_k[:, None] < K) & (offs_n[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b, out_dtype=tl.float32)
        k += BLOCK_K
    acc = _epilogue(acc, ACTIVATION)
    tl.store(
        c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
        acc.to(c_ptr.dtype.element_ty),
        mask=(offs_m[:, None] < M) & (offs_n[None, :] < N),
    )
"""
)

# ---------------------------------------------------------------- exercise 5: FlashAttention
ATTENTION = (
    HEADER
    + """\
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
    tl.store(
        o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len
    )
"""
)

ATTENTION_OK_FULL_LOOP_EXP2 = (
    HEADER
    + """\
@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    # every key block is visited (no early stop); the causal mask alone hides future keys,
    # and the softmax runs in base 2 with the scale folded into log2(e)
    log2e = 1.4426950408889634
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    row_ok = rows < seq_len
    q = tl.load(q_ptr + rows[:, None] * stride_q + d[None, :], mask=row_ok[:, None], other=0.0)
    qk_scale = sm_scale * log2e
    m_i = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for n0 in range(0, seq_len, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_ok = cols < seq_len
        kt = tl.load(k_ptr + cols[None, :] * stride_k + d[:, None], mask=col_ok[None, :], other=0.0)
        v = tl.load(v_ptr + cols[:, None] * stride_v + d[None, :], mask=col_ok[:, None], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        allowed = col_ok[None, :]
        if CAUSAL:
            allowed = allowed & (cols[None, :] <= rows[:, None])
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = alpha * l_i + tl.sum(p, axis=1)
        acc = alpha[:, None] * acc
        acc += tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(
        o_ptr + rows[:, None] * stride_o + d[None, :],
        (acc / l_i[:, None]).to(o_ptr.dtype.element_ty),
        mask=row_ok[:, None],
    )
"""
)

# ---------------------------------------------------------------- exercise 6: cross-entropy
CROSS_ENTROPY = (
    HEADER
    + """\
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
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
"""
)

CE_OK_GATHER_TARGET_ROW = (
    HEADER
    + """\
@triton.jit
def cross_entropy_kernel(
    h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
    HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr,
):
    r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HIDDEN)
    ok = r < n_rows
    h = tl.load(h_ptr + r[:, None] * stride_h + d[None, :], mask=ok[:, None], other=0.0)
    t = tl.load(target_ptr + r, mask=ok, other=0)
    # the target's logit straight from its row of w: one dot product per row
    w_t = tl.load(w_ptr + t[:, None] * stride_w + d[None, :], mask=ok[:, None], other=0.0)
    target_logit = tl.sum(h.to(tl.float32) * w_t.to(tl.float32), axis=1)
    run_max = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    run_sum = tl.zeros((BLOCK_M,), tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        c = v0 + tl.arange(0, BLOCK_V)
        w = tl.load(w_ptr + c[:, None] * stride_w + d[None, :], mask=c[:, None] < vocab, other=0.0)
        z = tl.where(c[None, :] < vocab, tl.dot(h, tl.trans(w)), float("-inf"))
        new_max = tl.maximum(run_max, tl.max(z, axis=1))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(z - new_max[:, None]), axis=1)
        run_max = new_max
    lse = run_max + tl.log(run_sum)
    tl.store(loss_ptr + r, lse - target_logit, mask=ok)
"""
)

CE_OK_LOGPROB = _edit(
    CROSS_ENTROPY,
    "    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)\n",
    "    log_prob = (picked - m) - tl.log(s)  # log softmax of the target\n"
    "    tl.store(loss_ptr + rows, -log_prob, mask=row_ok)\n",
    "    target = tl.load(target_ptr + rows, mask=row_ok, other=0)\n",
    "    target = tl.load(target_ptr + rows, mask=row_ok, other=-1).to(tl.int32)\n",
)


def _w(name, ex, half, source, cause, submit="", hints=()):
    return Blind(name, ex, half, source, False, cause=cause, submit=submit, hints=hints)


def _ok(name, ex, half, source):
    return Blind(name, ex, half, source, True)


V, S, L, MM, FA, CE = (
    "triton_vector_add",
    "triton_softmax",
    "triton_layernorm",
    "triton_matmul",
    "triton_flash_attention",
    "triton_cross_entropy",
)

ANSWERS = [
    # ------------------------------------------------------------ vector add
    _ok("add_helper_other_zero", V, "tune", ADD_OK_HELPER),
    _ok("add_inline_le_mask", V, "held", ADD_OK_INLINE),
    _w(
        "add_no_mask",
        V,
        "tune",
        _edit(
            ADD,
            "x = tl.load(x_ptr + offsets, mask=mask)",
            "x = tl.load(x_ptr + offsets)",
            "y = tl.load(y_ptr + offsets, mask=mask)",
            "y = tl.load(y_ptr + offsets)",
            "tl.store(out_ptr + offsets, x + y, mask=mask)",
            "tl.store(out_ptr + offsets, x + y)",
        ),
        "No load or store is masked, so the last program reads and writes past the end of the "
        "tensors when n_elements is not a multiple of BLOCK_SIZE.",
    ),
    _w(
        "add_store_unmasked",
        V,
        "held",
        _edit(ADD, "x + y, mask=mask)", "x + y)"),
        "The loads are masked but the store is not, so the last program writes past the end of "
        "out when n_elements is not a multiple of BLOCK_SIZE.",
    ),
    _w(
        "add_mask_off_by_one",
        V,
        "tune",
        _edit(ADD, "mask = offsets < n_elements", "mask = offsets <= n_elements"),
        "The mask offsets <= n_elements lets one lane past the end (index n_elements) load and "
        "store; it must be offsets < n_elements.",
    ),
    _w(
        "add_offsets_missing_block_size",
        V,
        "held",
        _edit(ADD, "offsets = pid * BLOCK_SIZE + tl.arange", "offsets = pid + tl.arange"),
        "The offsets are pid + arange instead of pid * BLOCK_SIZE + arange, so the programs' "
        "blocks overlap and everything past the first block plus a few elements is never written.",
    ),
    _w(
        "add_wrong_program_axis",
        V,
        "tune",
        _edit(ADD, "pid = tl.program_id(axis=0)", "pid = tl.program_id(axis=1)"),
        "The grid is one-dimensional, so tl.program_id(axis=1) is always 0 and every program "
        "handles the first block; the block index is tl.program_id(0).",
    ),
    _w(
        "add_subtracts",
        V,
        "held",
        _edit(ADD, "x + y, mask=mask)", "x - y, mask=mask)"),
        "The kernel stores x - y instead of the sum x + y.",
    ),
    _w(
        "add_half_precision",
        V,
        "tune",
        _edit(
            ADD,
            "x + y, mask=mask)",
            "x.to(tl.float16) + y.to(tl.float16), mask=mask)",
        ),
        "The inputs are cast to float16 before adding, which rounds the float32 sum to about three "
        "significant digits; add in the inputs' own dtype.",
    ),
    _w(
        "add_writes_into_x",
        V,
        "held",
        _edit(ADD, "tl.store(out_ptr + offsets", "tl.store(x_ptr + offsets"),
        "The sum is stored into x (in place) instead of into out, so out is never written.",
    ),
    # ------------------------------------------------------------ softmax
    _ok("softmax_three_passes", S, "tune", SOFTMAX_OK_THREE_PASS),
    _ok("softmax_where_int64_rows", S, "held", SOFTMAX_OK_WHERE),
    _w(
        "softmax_no_rescale",
        S,
        "tune",
        _edit(
            SOFTMAX,
            "s = s * tl.exp(m - m_new) + tl.sum",
            "s = s + tl.sum",
        ),
        "The running sum is not rescaled by exp(m - m_new) when the maximum grows, so terms "
        "summed against an older, smaller maximum are too large whenever a row spans several "
        "blocks.",
    ),
    _w(
        "softmax_masked_lanes_zero",
        S,
        "held",
        _edit(
            SOFTMAX,
            'x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))',
            "x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)",
        ),
        "Masked lanes are loaded as 0.0 instead of -inf, so each padded column adds exp(0 - m) to "
        "the sum (and can raise the maximum) when n_cols is not a multiple of BLOCK_SIZE.",
    ),
    _w(
        "softmax_rows_by_n_cols",
        S,
        "tune",
        _edit(
            SOFTMAX,
            "x_row = x_ptr + row * x_row_stride",
            "x_row = x_ptr + row * n_cols",
        ),
        "Rows are addressed as row * n_cols, which assumes a contiguous input; a view with gaps "
        "between rows needs row * x_row_stride.",
    ),
    _w(
        "softmax_no_division",
        S,
        "held",
        _edit(SOFTMAX, "tl.exp(x - m) / s, mask=mask)", "tl.exp(x - m), mask=mask)"),
        "The second pass stores exp(x - m) without dividing by the sum s, so rows do not sum to 1.",
    ),
    _w(
        "softmax_first_block_only",
        S,
        "tune",
        _edit(
            SOFTMAX,
            "    for start in range(0, n_cols, BLOCK_SIZE):\n"
            "        cols = start + tl.arange(0, BLOCK_SIZE)\n"
            '        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))\n'
            "        m_new = tl.maximum(m, tl.max(x, axis=0))\n"
            "        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)\n"
            "        m = m_new\n",
            "    cols = tl.arange(0, BLOCK_SIZE)\n"
            '    x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))\n'
            "    m = tl.max(x, axis=0)\n"
            "    s = tl.sum(tl.exp(x - m), axis=0)\n",
        ),
        "The maximum and sum come from the first BLOCK_SIZE columns only, so rows longer than "
        "one block are normalised with the wrong statistics; loop over all blocks.",
    ),
    _w(
        "softmax_rescale_inverted",
        S,
        "held",
        _edit(SOFTMAX, "s = s * tl.exp(m - m_new)", "s = s * tl.exp(m_new - m)"),
        "The rescale factor is inverted, exp(m_new - m) instead of exp(m - m_new): on the first "
        "block it is exp(+inf) times 0, a NaN, and later it grows the sum instead of shrinking it.",
    ),
    _w(
        "softmax_skips_partial_block",
        S,
        "tune",
        _edit(
            SOFTMAX,
            "        m = m_new\n    for start in range(0, n_cols, BLOCK_SIZE):",
            "        m = m_new\n    for start in range(0, n_cols // BLOCK_SIZE * BLOCK_SIZE, "
            "BLOCK_SIZE):",
        ),
        "The output pass stops at n_cols // BLOCK_SIZE * BLOCK_SIZE, so the last, partial block "
        "of each row is never written when n_cols is not a multiple of BLOCK_SIZE.",
    ),
    _w(
        "softmax_max_starts_at_zero",
        S,
        "held",
        _edit(SOFTMAX, '    m = -float("inf")\n    s = 0.0', "    m = 0.0\n    s = 0.0"),
        "The running maximum starts at 0 instead of -inf, so for a row whose values are all very "
        "negative every exp(x - 0) underflows to 0 and the output is 0/0.",
    ),
    # ------------------------------------------------------------ layer norm
    _ok("layernorm_rsqrt_other_one", L, "tune", LAYERNORM_OK_RSQRT),
    _ok("layernorm_stats_helper", L, "held", LAYERNORM_OK_TWO_SUMS),
    _w(
        "layernorm_padding_in_variance",
        L,
        "tune",
        _edit(LAYERNORM, "diff = tl.where(mask, x - mean, 0.0)", "diff = x - mean"),
        "The padded lanes (loaded as 0) are not masked out of the variance, so each adds mean^2 "
        "when n_cols is not a power of two.",
    ),
    _w(
        "layernorm_unbiased_variance",
        L,
        "held",
        _edit(
            LAYERNORM,
            "var = tl.sum(diff * diff, axis=0) / n_cols",
            "var = tl.sum(diff * diff, axis=0) / (n_cols - 1)",
        ),
        "The variance divides by n_cols - 1 (unbiased) but layer norm uses the biased variance, "
        "divided by n_cols.",
    ),
    _w(
        "layernorm_mean_over_block",
        L,
        "tune",
        _edit(
            LAYERNORM,
            "mean = tl.sum(x, axis=0) / n_cols",
            "mean = tl.sum(x, axis=0) / BLOCK_SIZE",
        ),
        "The mean divides by BLOCK_SIZE, the padded width, instead of n_cols, the number of real "
        "columns.",
    ),
    _w(
        "layernorm_eps_outside_sqrt",
        L,
        "held",
        _edit(LAYERNORM, "1.0 / tl.sqrt(var + eps)", "1.0 / (tl.sqrt(var) + eps)"),
        "eps is added after the square root, 1 / (sqrt(var) + eps), instead of inside it, "
        "1 / sqrt(var + eps).",
    ),
    _w(
        "layernorm_no_bias",
        L,
        "tune",
        _edit(LAYERNORM, "diff * rstd * w + b, mask=mask)", "diff * rstd * w, mask=mask)"),
        "The bias b is loaded but never added to the output.",
    ),
    _w(
        "layernorm_divides_by_variance",
        L,
        "held",
        _edit(LAYERNORM, "rstd = 1.0 / tl.sqrt(var + eps)", "rstd = 1.0 / (var + eps)"),
        "The kernel divides by the variance var + eps instead of the standard deviation "
        "sqrt(var + eps).",
        hints=("(var + eps)^(-1)", "not by its square root"),
    ),
    _w(
        "layernorm_out_uses_x_stride",
        L,
        "tune",
        _edit(
            LAYERNORM,
            "tl.store(out_ptr + row * out_row_stride",
            "tl.store(out_ptr + row * x_row_stride",
        ),
        "The output rows are addressed with the input's row stride; when x is a strided view "
        "the output needs out_row_stride.",
    ),
    _w(
        "layernorm_weight_per_row",
        L,
        "held",
        _edit(
            LAYERNORM,
            "w = tl.load(w_ptr + cols, mask=mask)\n    b = tl.load(b_ptr + cols, mask=mask)",
            "w = tl.load(w_ptr + row * n_cols + cols, mask=mask)\n"
            "    b = tl.load(b_ptr + row * n_cols + cols, mask=mask)",
        ),
        "w and b are one vector of n_cols shared by every row, but the kernel offsets them by "
        "the row as if they were matrices, reading past their end from row 1 on.",
        hints=("one vector shared by every row", "without the row's offset"),
    ),
    # ------------------------------------------------------------ matmul
    _ok("matmul_global_k_where_relu", MM, "tune", MATMUL_OK_GLOBAL_K),
    _ok("matmul_while_loop_helper", MM, "held", MATMUL_OK_HELPER),
    _w(
        "matmul_no_k_mask",
        MM,
        "tune",
        _edit(
            MATMUL,
            "mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0",
            "mask=offs_m[:, None] < M, other=0.0",
            "mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0",
            "mask=offs_n[None, :] < N, other=0.0",
        ),
        "The loads are masked on M and N but not on K, so when K is not a multiple of BLOCK_K "
        "the last step reads values past the end of each row of a and column of b into the dot "
        "product.",
    ),
    _w(
        "matmul_assumes_contiguous",
        MM,
        "held",
        _edit(
            MATMUL,
            "a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak",
            "a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]",
            "b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn",
            "b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]",
            "a_ptrs += BLOCK_K * stride_ak\n        b_ptrs += BLOCK_K * stride_bk",
            "a_ptrs += BLOCK_K\n        b_ptrs += BLOCK_K * N",
        ),
        "a and b are addressed as contiguous row-major (K and N as row lengths) instead of with "
        "their strides, which is wrong for the transposed view of b.",
    ),
    _w(
        "matmul_relu_inside_loop",
        MM,
        "tune",
        _edit(
            MATMUL,
            "        acc += tl.dot(a, b)\n",
            "        acc += tl.dot(a, b)\n"
            '        if ACTIVATION == "relu":\n'
            "            acc = tl.maximum(acc, 0.0)\n",
        ),
        "The ReLU is applied to the partial sums after every K step instead of once on the "
        "finished accumulator, which clips negative partial sums that later terms would raise.",
    ),
    _w(
        "matmul_ignores_activation",
        MM,
        "held",
        _edit(MATMUL, '    if ACTIVATION == "relu":\n        acc = tl.maximum(acc, 0.0)\n', ""),
        "The ACTIVATION constexpr is ignored: the relu epilogue is never applied.",
    ),
    _w(
        "matmul_program_axes_swapped",
        MM,
        "tune",
        _edit(
            MATMUL,
            "pid_m = tl.program_id(0)\n    pid_n = tl.program_id(1)",
            "pid_m = tl.program_id(1)\n    pid_n = tl.program_id(0)",
        ),
        "The program-id axes are swapped: axis 0 of the grid counts tiles along M and axis 1 "
        "along N, so when M and N differ some tiles of c are never computed.",
    ),
    _w(
        "matmul_b_pointer_not_advanced",
        MM,
        "held",
        _edit(MATMUL, "        b_ptrs += BLOCK_K * stride_bk\n", ""),
        "Only a's pointers move along K; b's stay on its first BLOCK_K rows, so every step "
        "multiplies by the same tile of b.",
        hints=("b's first block", "b_ptrs += BLOCK_K * stride_bk"),
    ),
    _w(
        "matmul_advance_without_stride",
        MM,
        "tune",
        _edit(
            MATMUL,
            "a_ptrs += BLOCK_K * stride_ak\n        b_ptrs += BLOCK_K * stride_bk",
            "a_ptrs += BLOCK_K\n        b_ptrs += BLOCK_K",
        ),
        "The pointers advance by BLOCK_K elements instead of BLOCK_K * stride along K, which is "
        "only right for a tensor whose K dimension is contiguous (not b in row-major order).",
    ),
    _w(
        "matmul_misses_last_k_block",
        MM,
        "held",
        _edit(MATMUL, "for k in range(0, K, BLOCK_K):", "for k in range(0, K - BLOCK_K, BLOCK_K):"),
        "The K loop stops at K - BLOCK_K, so the last block of K (a whole one when K is a "
        "multiple of BLOCK_K) is never added to the accumulator.",
        hints=("K block 2 never reaches", "The last block (k = 64) is skipped"),
    ),
    # ------------------------------------------------------------ FlashAttention
    _ok("attention_all_blocks_exp2", FA, "tune", ATTENTION_OK_FULL_LOOP_EXP2),
    _ok(
        "attention_renamed_split_update",
        FA,
        "held",
        _edit(
            ATTENTION,
            "        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)\n",
            "        acc = acc * alpha[:, None]\n        acc = tl.dot(p.to(v.dtype), v, acc)\n",
            "    o = acc / l_i[:, None]\n",
            "    o = acc * (1.0 / l_i)[:, None]\n",
        ),
    ),
    _w(
        "attention_causal_excludes_diagonal",
        FA,
        "tune",
        _edit(
            ATTENTION,
            "keep & (offs_m[:, None] >= offs_n[None, :])",
            "keep & (offs_m[:, None] > offs_n[None, :])",
        ),
        "The causal mask uses query > key, which also hides each query's own key (the diagonal): "
        "query 0 sees no key at all and its row is NaN.",
    ),
    _w(
        "attention_no_final_division",
        FA,
        "held",
        _edit(ATTENTION, "o = acc / l_i[:, None]", "o = acc"),
        "The accumulator is stored without the final division by l_i, so the outputs are "
        "unnormalised weighted sums.",
    ),
    _w(
        "attention_acc_not_rescaled",
        FA,
        "tune",
        _edit(
            ATTENTION,
            "acc = acc * alpha[:, None] + tl.dot",
            "acc = acc + tl.dot",
        ),
        "acc is not rescaled by alpha when the running maximum grows, so contributions from "
        "earlier key blocks are too large relative to l_i when there are several key blocks.",
    ),
    _w(
        "attention_masked_scores_zero",
        FA,
        "held",
        _edit(ATTENTION, 's = tl.where(keep, s, -float("inf"))', "s = tl.where(keep, s, 0.0)"),
        "Masked scores are set to 0 instead of -inf, so padded and (if causal) future keys still "
        "get weight exp(0 - m) in the softmax.",
    ),
    _w(
        "attention_no_scale",
        FA,
        "tune",
        _edit(ATTENTION, "s = tl.dot(q, tl.trans(k)) * sm_scale", "s = tl.dot(q, tl.trans(k))"),
        "The scores q @ k^T are not multiplied by sm_scale (1/sqrt(head_dim)), so the softmax is "
        "too sharp.",
    ),
    _w(
        "attention_causal_end_excludes_own_block",
        FA,
        "held",
        _edit(
            ATTENTION,
            "end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len",
            "end = start_m if CAUSAL else seq_len",
        ),
        "With CAUSAL the key loop stops at start_m and skips the block holding the queries' own "
        "(diagonal) keys: the first query block sees no key at all and the others miss their "
        "nearest keys.",
        hints=("rows 0-15 see no key at all", "misses the key block(s) holding its own"),
    ),
    _w(
        "attention_l_not_rescaled",
        FA,
        "tune",
        _edit(ATTENTION, "l_i = l_i * alpha + tl.sum(p, axis=1)", "l_i = l_i + tl.sum(p, axis=1)"),
        "The running denominator l_i is not rescaled by alpha when the maximum grows, so it is "
        "too large (outputs too small) when there are several key blocks.",
    ),
    _w(
        "attention_mask_on_query_axis",
        FA,
        "held",
        _edit(ATTENTION, "keep = offs_n[None, :] < seq_len", "keep = offs_m[:, None] < seq_len"),
        "The sequence-end mask tests the query index instead of the key index, so the padded keys "
        "past seq_len (loaded as zeros, score 0) still take part in the softmax.",
    ),
    # ------------------------------------------------------------ cross-entropy
    _ok("cross_entropy_gather_target_row", CE, "tune", CE_OK_GATHER_TARGET_ROW),
    _ok("cross_entropy_negative_log_prob", CE, "held", CE_OK_LOGPROB),
    _w(
        "cross_entropy_local_column",
        CE,
        "tune",
        _edit(
            CROSS_ENTROPY,
            "tl.where(cols[None, :] == target[:, None], logits, 0.0)",
            "tl.where(tl.arange(0, BLOCK_V)[None, :] == target[:, None], logits, 0.0)",
        ),
        "The target is compared with the column index inside the block (0..BLOCK_V-1) instead of "
        "the global column v0 + arange, so targets past the first block are picked wrongly.",
    ),
    _w(
        "cross_entropy_padding_counts",
        CE,
        "held",
        _edit(
            CROSS_ENTROPY,
            '        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))\n',
            "",
        ),
        "The logits of padded vocabulary columns (0, from zero-filled rows of w) are not set to "
        "-inf, so each adds exp(0 - m) to the sum when vocab is not a multiple of BLOCK_V.",
    ),
    _w(
        "cross_entropy_sum_not_rescaled",
        CE,
        "tune",
        _edit(CROSS_ENTROPY, "s = s * tl.exp(m - m_new) + tl.sum", "s = s + tl.sum"),
        "The running sum is not rescaled by exp(m - m_new) when the maximum grows over the "
        "vocabulary blocks, so the log-sum-exp is too large.",
    ),
    _w(
        "cross_entropy_forgets_max",
        CE,
        "held",
        _edit(CROSS_ENTROPY, "m + tl.log(s) - picked", "tl.log(s) - picked"),
        "The loss drops the running maximum: the log-sum-exp is m + log(s), not log(s), since s "
        "was summed relative to m.",
    ),
    _w(
        "cross_entropy_sign_flipped",
        CE,
        "tune",
        _edit(CROSS_ENTROPY, "m + tl.log(s) - picked", "picked - m - tl.log(s)"),
        "The kernel stores the target's log-probability, which is minus the loss; cross-entropy "
        "is logsumexp - target_logit.",
    ),
    _w(
        "cross_entropy_first_vocab_block",
        CE,
        "held",
        _edit(
            CROSS_ENTROPY,
            "    for v0 in range(0, vocab, BLOCK_V):\n",
            "    for v0 in range(0, BLOCK_V, BLOCK_V):\n",
        ),
        "The loop runs over the first BLOCK_V vocabulary entries only, so the log-sum-exp misses "
        "the rest of the vocabulary (and targets past it are never picked).",
        hints=("columns 0-63 only", "never reach your loss"),
    ),
    _w(
        "cross_entropy_w_transposed_layout",
        CE,
        "tune",
        _edit(
            CROSS_ENTROPY,
            "        w = tl.load(\n"
            "            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < "
            "vocab, other=0.0\n"
            "        )\n"
            "        logits = tl.dot(h, tl.trans(w))\n",
            "        w = tl.load(\n"
            "            w_ptr + dims[:, None] * stride_w + cols[None, :], mask=cols[None, :] < "
            "vocab, other=0.0\n"
            "        )\n"
            "        logits = tl.dot(h, w)\n",
        ),
        "w is vocab x hidden (one row per vocabulary entry, rows stride_w apart), but the kernel "
        "reads it as hidden x vocab, so the logits use the wrong weights.",
    ),
    _w(
        "cross_entropy_max_starts_at_zero",
        CE,
        "held",
        _edit(
            CROSS_ENTROPY,
            'm = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)',
            "m = tl.zeros((BLOCK_M,), dtype=tl.float32)",
        ),
        "The running maximum starts at 0 instead of -inf, so when every logit of a row is very "
        "negative exp(logit - 0) underflows, s is 0 and the loss is infinite.",
    ),
]
