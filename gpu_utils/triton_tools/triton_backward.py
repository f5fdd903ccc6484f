"""Backward kernels in Triton (chapter 12, section 10): the half of training the forward
kernels leave out, each wrapped as a ``torch.autograd.Function`` and checked against
``torch.autograd`` (tests/test_triton_backward.py).

- :func:`fused_cross_entropy`: the mean cross-entropy of a batch of logits whose forward also
  writes the gradient, ``dlogits = (softmax(logits) - onehot(target)) / N``, into the logits'
  own memory while each row is on chip: one kernel, no second pass over the logits in the
  backward and no second n x vocab buffer (Liger-Kernel's cross-entropy, Hsu et al. 2024,
  arXiv 2410.10989; ``liger_kernel/ops/cross_entropy.py`` stores the
  gradient into ``X_ptr``). Targets equal to ``ignore_index`` count neither in the loss nor in
  N, as in ``torch.nn.functional.cross_entropy``.
- :func:`flash_attention`: FlashAttention-2 (Dao 2023, arXiv 2307.08691): the forward
  (Algorithm 1) saves the log-sum-exp ``L`` of each row of scores; the backward (Algorithm 2)
  computes ``D = rowsum(dO * O)``, then dK and dV with one program per key block looping over
  the query blocks, and dQ in a second kernel, one program per query block looping over the key
  blocks. The paper updates dQ with atomic adds from the key-block programs; a
  second kernel recomputes the scores once more but writes each dQ block from one program, so
  the result does not depend on the order programs finish in (float addition is not
  associative), as Triton's tutorial 06 (``06-fused-attention.py``, ``_attn_bwd``) also does.
- :func:`layer_norm`: layer norm whose backward sums the per-row contributions to dW and db
  across programs. Triton's tutorial 05 (``05-layer-norm.py``, ``_layer_norm_bwd_dx_fused``):
  each program adds its row into one of ``GROUP_SIZE_M`` buffer rows under a spin lock
  (the tutorial takes it with ``tl.atomic_cas(Lock, 0, 1)`` and releases it with
  ``tl.atomic_xchg(Lock, 0)``; here ``tl.atomic_xchg(lock, 1)`` takes it, the same test-and-set:
  the program that swaps out a 0 holds it), then ``_layer_norm_bwd_dwdb`` sums the buffer rows. ``reduction="nolock"`` leaves the lock out
  (a race on a GPU), ``reduction="atomic"`` uses ``tl.atomic_add`` into one row.

In Triton's interpreter (the simulator mode of this course) programs run one after another, so
no two programs ever race: the version without the lock gives the right answer there, and only a
GPU shows what it does wrong.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

__all__ = [
    "FlashAttention",
    "FusedCrossEntropy",
    "LayerNorm",
    "attention_reference",
    "flash_attention",
    "fused_cross_entropy",
    "layer_norm",
]


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


# --- cross-entropy whose forward writes the gradient (Liger-Kernel) -----------------------------


@triton.jit
def cross_entropy_fwd_bwd_kernel(
    logits_ptr, target_ptr, loss_ptr, lse_ptr, stride, vocab, ignore_index, inv_n,
    BLOCK_V: tl.constexpr,
):  # fmt: skip
    """One program per row: the row's log-sum-exp and loss (pass 1), then its gradient written
    over its logits (pass 2), (softmax - onehot) * inv_n, zero for an ignored row."""
    row = tl.program_id(0)
    row_ptr = logits_ptr + row.to(tl.int64) * stride
    target = tl.load(target_ptr + row)
    m = -float("inf")  # running maximum and rescaled sum (online softmax, chapter 05)
    s = 0.0
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(row_ptr + cols, mask=cols < vocab, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    ignored = target == ignore_index
    picked = tl.load(row_ptr + tl.where(ignored, 0, target)).to(tl.float32)
    tl.store(lse_ptr + row, lse)
    tl.store(loss_ptr + row, tl.where(ignored, 0.0, lse - picked))
    scale = tl.where(ignored, 0.0, inv_n)
    for start in range(0, vocab, BLOCK_V):  # the row is read again, from the cache on a GPU
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(row_ptr + cols, mask=cols < vocab, other=0.0).to(tl.float32)
        grad = tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)
        tl.store(row_ptr + cols, grad * scale, mask=cols < vocab)


class FusedCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy whose forward computes the gradient too; its backward only scales
    it by the incoming gradient. The logits' memory holds the gradient afterwards."""

    @staticmethod
    def forward(ctx, logits, target, ignore_index=-100, block_v=None):
        n, vocab = logits.shape
        block = block_v or min(triton.next_power_of_2(vocab), 1024)
        grad = logits.detach()  # the same memory: overwritten by the kernel
        counted = int((target != ignore_index).sum())
        loss = torch.empty(n, dtype=torch.float32, device=logits.device)
        lse = torch.empty(n, dtype=torch.float32, device=logits.device)
        cross_entropy_fwd_bwd_kernel[(n,)](
            grad, target, loss, lse, grad.stride(0), vocab, ignore_index,
            1.0 / counted if counted else 0.0, BLOCK_V=block,
        )  # fmt: skip
        ctx.save_for_backward(grad)
        ctx.mark_non_differentiable(lse)
        total = loss.sum() / counted if counted else loss.sum() * math.nan
        return total.to(logits.dtype), lse

    @staticmethod
    def backward(ctx, grad_loss, _grad_lse):
        (grad,) = ctx.saved_tensors
        return grad * grad_loss.to(grad.dtype), None, None, None


def fused_cross_entropy(
    logits: torch.Tensor,
    target: torch.Tensor,
    ignore_index: int = -100,
    block_v: int | None = None,
    return_lse: bool = False,
):
    """``torch.nn.functional.cross_entropy(logits, target, ignore_index=...)`` (mean over the
    rows not ignored) by :class:`FusedCrossEntropy`. ``logits`` (rows x vocab) must be the
    output of a layer, not a leaf: the kernel overwrites it with its gradient (Liger-Kernel does
    the same), so read it before, not after. ``block_v``: columns per step (a power of two)."""
    _check(logits.dim() == 2, f"logits must be 2-D (rows x vocab), not {tuple(logits.shape)}")
    _check(
        logits.dtype in (torch.float32, torch.float16, torch.bfloat16),
        f"logits must be float32, float16 or bfloat16, not {logits.dtype}",
    )
    _check(
        target.shape == logits.shape[:1] and target.dtype == torch.int64,
        f"target must be int64 with one entry per row ({logits.shape[0]}), "
        f"not {target.dtype} {tuple(target.shape)}",
    )
    _check(logits.stride(1) == 1, "logits' rows must be contiguous: pass logits.contiguous()")
    _check(
        not (logits.is_leaf and logits.requires_grad),
        "logits is a leaf that requires grad: the kernel would overwrite it with its gradient; "
        "pass the output of a layer (or logits.clone())",
    )
    valid = (target == ignore_index) | ((target >= 0) & (target < logits.shape[1]))
    _check(bool(valid.all()), f"targets must be in [0, {logits.shape[1]}) or {ignore_index}")
    _check(
        block_v is None or (block_v > 0 and block_v & (block_v - 1) == 0),
        f"block_v must be a power of two, not {block_v}",
    )
    loss, lse = FusedCrossEntropy.apply(logits, target, ignore_index, block_v)
    return (loss, lse) if return_lse else loss


# --- FlashAttention-2: forward saving L, backward (Dao 2023, Algorithms 1 and 2) ----------------


@triton.jit
def attention_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, seq, scale, stride_h, stride_s,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    """Program (query block, head): O and L = m + log(l) for BLOCK_M rows (Algorithm 1)."""
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64) * stride_h
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m[:, None] * stride_s + offs_d[None, :]
    q = tl.load(q_ptr + head + rows, mask=offs_m[:, None] < seq, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    end = tl.minimum(start_m + BLOCK_M, seq) if CAUSAL else seq
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        cols = offs_n[:, None] * stride_s + offs_d[None, :]
        k = tl.load(k_ptr + head + cols, mask=offs_n[:, None] < seq, other=0.0)
        v = tl.load(v_ptr + head + cols, mask=offs_n[:, None] < seq, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = offs_n[None, :] < seq
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(o_ptr + head + rows, acc / l_i[:, None], mask=offs_m[:, None] < seq)
    lse_row = tl.program_id(1).to(tl.int64) * seq + offs_m
    tl.store(lse_ptr + lse_row, m_i + tl.log(l_i), mask=offs_m < seq)  # saved for the backward


@triton.jit
def attention_bwd_preprocess_kernel(
    o_ptr, do_ptr, delta_ptr, seq, stride_h, stride_s,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
):  # fmt: skip
    """D_i = rowsum(dO_i * O_i) (Algorithm 2), one program per query block and head."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    head = tl.program_id(1).to(tl.int64) * stride_h
    offs_d = tl.arange(0, HEAD_DIM)
    rows = head + offs_m[:, None] * stride_s + offs_d[None, :]
    o = tl.load(o_ptr + rows, mask=offs_m[:, None] < seq, other=0.0).to(tl.float32)
    do = tl.load(do_ptr + rows, mask=offs_m[:, None] < seq, other=0.0).to(tl.float32)
    delta_row = tl.program_id(1).to(tl.int64) * seq + offs_m
    tl.store(delta_ptr + delta_row, tl.sum(o * do, axis=1), mask=offs_m < seq)


@triton.jit
def attention_bwd_dkdv_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, seq, scale,
    stride_h, stride_s,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    """Program (key block j, head): dK_j and dV_j, looping over the query blocks i that see it
    (Algorithm 2): P = exp(S - L), dV += P^T dO, dP = dO V^T, dS = P (dP - D),
    dK += dS^T Q * scale."""
    start_n = tl.program_id(0) * BLOCK_N
    bh = tl.program_id(1).to(tl.int64)
    head = bh * stride_h
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    cols = head + offs_n[:, None] * stride_s + offs_d[None, :]
    k = tl.load(k_ptr + cols, mask=offs_n[:, None] < seq, other=0.0)
    v = tl.load(v_ptr + cols, mask=offs_n[:, None] < seq, other=0.0)
    dk = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    start = (start_n // BLOCK_M) * BLOCK_M if CAUSAL else 0  # causal: earlier queries see none
    for start_m in range(start, seq, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        rows = head + offs_m[:, None] * stride_s + offs_d[None, :]
        q = tl.load(q_ptr + rows, mask=offs_m[:, None] < seq, other=0.0)
        do = tl.load(do_ptr + rows, mask=offs_m[:, None] < seq, other=0.0)
        lse = tl.load(lse_ptr + bh * seq + offs_m, mask=offs_m < seq, other=0.0)
        delta = tl.load(delta_ptr + bh * seq + offs_m, mask=offs_m < seq, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = (offs_m[:, None] < seq) & (offs_n[None, :] < seq)
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p = tl.where(keep, tl.exp(s - lse[:, None]), 0.0)
        dv += tl.dot(tl.trans(p).to(do.dtype), do)
        dp = tl.dot(do, tl.trans(v)).to(tl.float32)
        ds = p * (dp - delta[:, None])
        dk += tl.dot(tl.trans(ds).to(q.dtype), q)
    tl.store(dk_ptr + cols, dk * scale, mask=offs_n[:, None] < seq)
    tl.store(dv_ptr + cols, dv, mask=offs_n[:, None] < seq)


@triton.jit
def attention_bwd_dq_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, seq, scale, stride_h, stride_s,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    """Program (query block i, head): dQ_i = sum over key blocks j of dS_ij K_j * scale, the
    scores recomputed from L instead of added atomically by the key-block programs."""
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1).to(tl.int64)
    head = bh * stride_h
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = head + offs_m[:, None] * stride_s + offs_d[None, :]
    q = tl.load(q_ptr + rows, mask=offs_m[:, None] < seq, other=0.0)
    do = tl.load(do_ptr + rows, mask=offs_m[:, None] < seq, other=0.0)
    lse = tl.load(lse_ptr + bh * seq + offs_m, mask=offs_m < seq, other=0.0)
    delta = tl.load(delta_ptr + bh * seq + offs_m, mask=offs_m < seq, other=0.0)
    dq = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    end = tl.minimum(start_m + BLOCK_M, seq) if CAUSAL else seq
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        cols = head + offs_n[:, None] * stride_s + offs_d[None, :]
        k = tl.load(k_ptr + cols, mask=offs_n[:, None] < seq, other=0.0)
        v = tl.load(v_ptr + cols, mask=offs_n[:, None] < seq, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = (offs_m[:, None] < seq) & (offs_n[None, :] < seq)
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p = tl.where(keep, tl.exp(s - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v)).to(tl.float32)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k)
    tl.store(dq_ptr + rows, dq * scale, mask=offs_m[:, None] < seq)


class FlashAttention(torch.autograd.Function):
    """softmax(Q K^T * scale [causal]) V for (batch, heads, seq, head_dim) tensors."""

    @staticmethod
    def forward(ctx, q, k, v, causal=False, scale=None, blocks=(32, 32)):
        batch, heads, seq, dim = q.shape
        scale = scale if scale is not None else 1.0 / math.sqrt(dim)
        block_m, block_n = blocks
        q3, k3, v3 = (t.reshape(batch * heads, seq, dim).contiguous() for t in (q, k, v))
        o = torch.empty_like(q3)
        lse = torch.empty(batch * heads, seq, dtype=torch.float32, device=q.device)
        grid = (triton.cdiv(seq, block_m), batch * heads)
        attention_fwd_kernel[grid](
            q3, k3, v3, o, lse, seq, scale, q3.stride(0), q3.stride(1),
            HEAD_DIM=dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
        )  # fmt: skip
        ctx.save_for_backward(q3, k3, v3, o, lse)
        ctx.shape, ctx.scale, ctx.causal, ctx.blocks = q.shape, scale, causal, blocks
        return o.reshape(q.shape)

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        batch, heads, seq, dim = ctx.shape
        block_m, block_n = ctx.blocks
        do = do.reshape(batch * heads, seq, dim).contiguous()
        delta = torch.empty_like(lse)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        strides = (q.stride(0), q.stride(1))
        attention_bwd_preprocess_kernel[(triton.cdiv(seq, block_m), batch * heads)](
            o, do, delta, seq, *strides, HEAD_DIM=dim, BLOCK_M=block_m
        )
        meta = {"HEAD_DIM": dim, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": ctx.causal}
        attention_bwd_dkdv_kernel[(triton.cdiv(seq, block_n), batch * heads)](
            q, k, v, do, lse, delta, dk, dv, seq, ctx.scale, *strides, **meta
        )
        attention_bwd_dq_kernel[(triton.cdiv(seq, block_m), batch * heads)](
            q, k, v, do, lse, delta, dq, seq, ctx.scale, *strides, **meta
        )
        shape = ctx.shape
        return dq.reshape(shape), dk.reshape(shape), dv.reshape(shape), None, None, None


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = False,
    scale: float | None = None,
    blocks: tuple[int, int] = (32, 32),
) -> torch.Tensor:
    """FlashAttention-2 forward and backward (:class:`FlashAttention`) on (batch, heads, seq,
    head_dim) tensors of one shape; head_dim a power of two of at least 16 (``tl.dot``'s
    smallest), ``blocks`` = (BLOCK_M, BLOCK_N), powers of two of at least 16."""
    _check(q.dim() == 4, f"q, k, v must be (batch, heads, seq, head_dim), not {tuple(q.shape)}")
    _check(
        k.shape == q.shape and v.shape == q.shape,
        f"q, k, v must have one shape: {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}",
    )
    _check(q.dtype == k.dtype == v.dtype, "q, k and v must have one dtype")
    dim = q.shape[-1]
    _check(
        dim >= 16 and dim & (dim - 1) == 0,
        f"head_dim must be a power of two of at least 16, not {dim}",
    )
    _check(
        all(b >= 16 and b & (b - 1) == 0 for b in blocks),
        f"blocks must be powers of two of at least 16, not {blocks}",
    )
    return FlashAttention.apply(q, k, v, causal, scale, tuple(blocks))


def attention_reference(q, k, v, causal=False, scale=None):
    """Plain attention in PyTorch (the scores materialised): the oracle the tests differentiate
    with ``torch.autograd``."""
    scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = (q @ k.transpose(-1, -2)) * scale
    if causal:
        seq = q.shape[-2]
        future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


# --- layer norm: partial dW, db between programs (Triton's tutorial 05) -------------------------


@triton.jit
def layer_norm_fwd_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n, eps, BLOCK_N: tl.constexpr
):
    """One program per row: y = (x - mean) * rstd * w + b; mean and rstd saved."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * stride + cols, centred * rstd * w + b, mask=mask)


@triton.jit
def layer_norm_bwd_dx_kernel(
    dx_ptr, dy_ptr, dw_ptr, db_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, lock_ptr, stride, n,
    GROUP_SIZE_M: tl.constexpr, BLOCK_N: tl.constexpr, REDUCTION: tl.constexpr,
):  # fmt: skip
    """One program per row: dx, then the row's dy * xhat and dy added into buffer row
    ``row % GROUP_SIZE_M`` of dw and db. REDUCTION "lock": under that row's spin lock (lock[g]
    0 free / 1 taken, lock[GROUP_SIZE_M + g] 0 until the first write); "nolock": the same
    read-add-write without the lock; "atomic": ``tl.atomic_add`` into the buffer row."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = tl.where(mask, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / n
    c2 = tl.sum(wdy, axis=0) / n
    tl.store(dx_ptr + row * stride + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=mask)
    group = row % GROUP_SIZE_M
    partial_dw = dy * xhat
    partial_db = dy
    dw_row = dw_ptr + group * n + cols
    db_row = db_ptr + group * n + cols
    if REDUCTION == "atomic":
        tl.atomic_add(dw_row, partial_dw, mask=mask)
        tl.atomic_add(db_row, partial_db, mask=mask)
    else:
        lock = lock_ptr + group
        count = lock_ptr + GROUP_SIZE_M + group
        if REDUCTION == "lock":
            while tl.atomic_xchg(lock, 1) == 1:  # spin: a 0 swapped out means the lock is ours
                pass
        if tl.load(count) == 0:  # the group's first row: nothing to add to yet
            tl.atomic_xchg(count, 1)
        else:
            partial_dw += tl.load(dw_row, mask=mask)
            partial_db += tl.load(db_row, mask=mask)
        tl.store(dw_row, partial_dw, mask=mask)
        tl.store(db_row, partial_db, mask=mask)
        if REDUCTION == "lock":
            tl.atomic_xchg(lock, 0)  # release


@triton.jit
def layer_norm_bwd_dwdb_kernel(
    dw_ptr, db_ptr, final_dw_ptr, final_db_ptr, m, n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """One program per BLOCK_N columns: the sum of the m buffer rows."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, m, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < m) & (cols[None, :] < n)
        offsets = rows[:, None] * n + cols[None, :]
        dw += tl.load(dw_ptr + offsets, mask=mask, other=0.0)
        db += tl.load(db_ptr + offsets, mask=mask, other=0.0)
    tl.store(final_dw_ptr + cols, tl.sum(dw, axis=0), mask=cols < n)
    tl.store(final_db_ptr + cols, tl.sum(db, axis=0), mask=cols < n)


REDUCTIONS = ("lock", "nolock", "atomic")


class LayerNorm(torch.autograd.Function):
    """Layer norm over the last dimension of a 2-D x (float32 in the buffers)."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps=1e-5, group_size_m=4, reduction="lock"):
        rows, n = x.shape
        block = triton.next_power_of_2(n)
        y = torch.empty_like(x)
        mean = torch.empty(rows, dtype=torch.float32, device=x.device)
        rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
        layer_norm_fwd_kernel[(rows,)](
            x, y, weight, bias, mean, rstd, x.stride(0), n, eps, BLOCK_N=block
        )
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.group_size_m, ctx.reduction, ctx.block = group_size_m, reduction, block
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        rows, n = x.shape
        group = ctx.group_size_m
        dy = dy.contiguous()
        locks = torch.zeros(2 * group, dtype=torch.int32, device=x.device)
        partial_dw = torch.zeros(group, n, dtype=torch.float32, device=x.device)
        partial_db = torch.zeros(group, n, dtype=torch.float32, device=x.device)
        dx = torch.empty_like(x)
        layer_norm_bwd_dx_kernel[(rows,)](
            dx, dy, partial_dw, partial_db, x, weight, mean, rstd, locks, x.stride(0), n,
            GROUP_SIZE_M=group, BLOCK_N=ctx.block, REDUCTION=ctx.reduction,
        )  # fmt: skip
        dw = torch.empty(n, dtype=torch.float32, device=x.device)
        db = torch.empty(n, dtype=torch.float32, device=x.device)
        layer_norm_bwd_dwdb_kernel[(triton.cdiv(n, 32),)](
            partial_dw, partial_db, dw, db, group, n, BLOCK_M=16, BLOCK_N=32
        )
        return dx, dw.to(weight.dtype), db.to(weight.dtype), None, None, None


def layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    eps: float = 1e-5,
    group_size_m: int = 4,
    reduction: str = "lock",
) -> torch.Tensor:
    """``torch.nn.functional.layer_norm(x, (n,), weight, bias, eps)`` for a 2-D x with
    contiguous rows, by :class:`LayerNorm`. ``group_size_m`` buffer rows collect the partial
    dW, db (Triton's tutorial 05 uses 64 to 256 on a GPU); ``reduction``: "lock", "nolock"
    (wrong on a GPU: two programs of one group can read the same old row and one addition is
    lost; right in the interpreter, where programs never overlap) or "atomic"."""
    _check(x.dim() == 2, f"x must be 2-D (rows x features), not {tuple(x.shape)}")
    _check(x.stride(1) == 1, "x's rows must be contiguous: pass x.contiguous()")
    n = x.shape[1]
    _check(
        weight.shape == (n,) and bias.shape == (n,),
        f"weight and bias must have {n} entries, not {tuple(weight.shape)}, {tuple(bias.shape)}",
    )
    _check(reduction in REDUCTIONS, f"reduction must be one of {REDUCTIONS}, not {reduction!r}")
    _check(group_size_m >= 1, f"group_size_m must be at least 1, not {group_size_m}")
    return LayerNorm.apply(x, weight, bias, eps, group_size_m, reduction)
