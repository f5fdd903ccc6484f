"""The Triton reference kernels of ``gu.inference_kernels`` (``int8_gemv``,
``paged_decode_attention``; chapter 13, lab 13 part 2), in a module of their own: importing it
imports triton, in the mode ``gpu_utils.runtime`` chose (the interpreter on the simulator), and
a checker's process that receives a kernel imports it by this name."""

from __future__ import annotations

import triton  # gpu_utils.runtime, imported with the package, chose the mode before this
import triton.language as tl


@triton.jit
def int8_gemv_kernel(
    q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr
):
    row = tl.program_id(0)  # one program per output row
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < n_cols  # the last block of a row may be partial
        q = tl.load(q_ptr + row * n_cols + cols, mask=inside, other=0)
        s = tl.load(scale_ptr + row * (n_cols // GROUP) + cols // GROUP, mask=inside, other=0.0)
        x = tl.load(x_ptr + cols, mask=inside, other=0.0)
        acc += q.to(tl.float32) * s * x  # dequantised in registers, summed in float32
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def paged_attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    table_ptr,
    lens_ptr,
    out_ptr,
    max_blocks,
    scale,
    D,
    BLOCK_SIZE: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    seq = tl.program_id(0)  # one program per sequence: its one query token
    length = tl.load(lens_ptr + seq)
    d = tl.arange(0, BLOCK_D)
    t = tl.arange(0, BLOCK_SIZE)
    q = tl.load(q_ptr + seq * D + d, mask=d < D, other=0.0)
    m = tl.max(tl.full((BLOCK_SIZE,), float("-inf"), tl.float32), axis=0)  # running max
    total = tl.sum(tl.zeros((BLOCK_SIZE,), tl.float32), axis=0)  # running sum of exp
    acc = tl.zeros((BLOCK_D,), tl.float32)
    for b in range(0, tl.cdiv(length, BLOCK_SIZE)):
        block = tl.load(table_ptr + seq * max_blocks + b)  # the physical block of logical b
        valid = b * BLOCK_SIZE + t < length  # the last block may be partly filled
        offsets = block * BLOCK_SIZE * D + t[:, None] * D + d[None, :]
        inside = valid[:, None] & (d[None, :] < D)
        k = tl.load(k_ptr + offsets, mask=inside, other=0.0)
        s = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)  # rescales what was summed against the old maximum
        p = tl.exp(s - m_new)
        total = total * alpha + tl.sum(p, axis=0)
        v = tl.load(v_ptr + offsets, mask=inside, other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(out_ptr + seq * D + d, acc / total, mask=d < D)
