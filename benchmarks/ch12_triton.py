"""Record chapter 12's Triton kernels against PyTorch on a real GPU, for learners on the simulator.

Usage, on a machine with an NVIDIA GPU and a CUDA build of PyTorch (with Triton), from the
repository root:

    python benchmarks/ch12_triton.py                 # everything, about a minute on an H100
    python benchmarks/ch12_triton.py --only softmax,matmul

Each kernel's result is checked against PyTorch first, then timed with
``triton.testing.do_bench`` (median of its repeats, after a warm-up):

- **softmax** and **layer norm** (float32, 8192 x 4096, one program per row) in GB/s of their
  minimum traffic (read x once, write y once), against the device's own copy rate
  (``torch.Tensor.copy_`` of the same bytes): goal at least 80% of the copy;
- **matmul** (bfloat16, 4096^3, grouped ordering, a small ``@triton.autotune`` set) in TFLOP/s
  against ``torch.matmul`` (cuBLAS): goal at least 70%;
- **attention forward** (FlashAttention-2 structure, bfloat16, batch 4 x 16 heads, sequence 4096,
  head dimension 64 and 128, not causal) against ``scaled_dot_product_attention`` restricted to
  its flash backend: goal at least 50%;
- **attention backward** (chapter 12's section 10, ``gpu_utils.triton_tools.triton_backward``: FlashAttention-2's
  Algorithm 2 with dK/dV per key block and dQ in a second kernel; bfloat16, batch 4 x 16 heads,
  sequence 4096, head dimension 64 and 128, causal and not) against the backward of
  ``scaled_dot_product_attention``'s flash backend, in TFLOP/s counted as FlashAttention's own
  benchmark does (``benchmarks/benchmark_flash_attention.py``: the backward is 2.5 times the
  forward's 4 x batch x heads x seq^2 x head_dim, halved when causal); no goal is set before a
  first measurement. Its gradients are checked first against float32 ones.

It also stores the Triton code that ``torch.compile`` generates for chapter 12's small fused
function on this GPU. Results go to ``gpu_utils/reference_data/ch12_triton.json`` (device, date,
command); commit that file, and notebooks/12_triton.ipynb shows it on the simulator. On the
simulator this script refuses: its timings would say nothing about a GPU.
"""

from __future__ import annotations

import argparse
import math
import sys

import gpu_utils as gu

NAME = "ch12_triton"
PARTS = ("softmax", "layernorm", "matmul", "attention", "attention_bwd", "inductor")
#: The goals of the chapter's issue, as fractions of the comparison.
GOALS = {"softmax": 0.8, "layernorm": 0.8, "matmul": 0.7, "attention": 0.5}
ROWS, COLS = 8192, 4096  # softmax and layer norm: 128 MiB of float32 read and written
MATMUL_N = 4096
BATCH, HEADS, SEQ, HEAD_DIMS = 4, 16, 4096, (64, 128)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        default=",".join(PARTS),
        help=f"comma-separated parts to run, of: {', '.join(PARTS)} (default: all)",
    )
    args = parser.parse_args(argv)
    chosen = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in PARTS]
    if unknown or not chosen:
        parser.error(
            f"unknown part(s) {', '.join(unknown) or '(none given)'}: choose from {', '.join(PARTS)}"
        )
    args.parts = chosen
    return args


def share_row(kernel: str, value: float, unit: str, reference: float, against: str) -> dict:
    """One result: the kernel's figure, the comparison's, and their ratio."""
    part = kernel.split(" ")[0]
    return {
        "kernel": kernel,
        "value": value,
        "unit": unit,
        "reference": reference,
        "against": against,
        "share": value / reference,
        "goal": GOALS.get(part),
    }


# --- the kernels (the chapter's and the lab's reference versions) ------------------------------

import triton  # noqa: E402 - after gpu_utils, which chooses the interpreter on the simulator
import triton.language as tl  # noqa: E402


@triton.jit
def softmax_kernel(
    x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr
):  # one row stride per tensor, as Triton's tutorial: `x` may be a strided view, `out` not
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_row_stride + cols, e / tl.sum(e, axis=0), mask=mask)


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


MATMUL_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4, num_stages=4),
]


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    first_m = (pid // (GROUP_M * num_n)) * GROUP_M
    group_rows = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_n)) % group_rows
    pid_n = (pid % (GROUP_M * num_n)) // group_rows
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
    tl.store(
        c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N)
    )


matmul_tuned = triton.autotune(configs=MATMUL_CONFIGS, key=["M", "N", "K"])(matmul_kernel)


@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_head, stride_row, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """FlashAttention-2's forward pass (Dao 2023, arXiv 2307.08691, Algorithm 1), not causal;
    program (i, h) computes rows i * BLOCK_M ... of head h (q, k, v, o: heads x seq x dim)."""
    head = tl.program_id(1).to(tl.int64) * stride_head
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + head + offs_m[:, None] * stride_row + offs_d[None, :],
        mask=offs_m[:, None] < seq_len,
        other=0.0,
    )
    qk_scale = sm_scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keep = offs_n[:, None] < seq_len
        k = tl.load(
            k_ptr + head + offs_n[:, None] * stride_row + offs_d[None, :], mask=keep, other=0.0
        )
        v = tl.load(
            v_ptr + head + offs_n[:, None] * stride_row + offs_d[None, :], mask=keep, other=0.0
        )
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(offs_n[None, :] < seq_len, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + head + offs_m[:, None] * stride_row + offs_d[None, :],
        o.to(o_ptr.dtype.element_ty),
        mask=offs_m[:, None] < seq_len,
    )


# --- launchers (also run by the tests in Triton's interpreter, at tiny sizes) ------------------


def softmax(x):
    import torch

    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](
        x,
        out,
        x.stride(0),
        out.stride(0),
        x.shape[1],
        BLOCK_SIZE=triton.next_power_of_2(x.shape[1]),
    )
    return out


def layernorm(x, w, b, eps=1e-5):
    import torch

    out = torch.empty_like(x)
    layernorm_kernel[(x.shape[0],)](
        x,
        w,
        b,
        out,
        x.stride(0),
        out.stride(0),
        x.shape[1],
        eps,
        BLOCK_SIZE=triton.next_power_of_2(x.shape[1]),
    )
    return out


def matmul(a, b, tuned: bool = True, block=(32, 32, 32)):
    import torch

    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=a.dtype)
    args = (a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride())
    if tuned:
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
        matmul_tuned[grid](*args, GROUP_M=8)
    else:
        bm, bn, bk = block
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        matmul_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8)
    return c


def attention(q, k, v, block=(128, 64), num_warps=None, num_stages=None):
    """q, k, v: (batch, heads, seq, dim), contiguous."""
    import torch

    batch, heads, seq, dim = q.shape
    o = torch.empty_like(q)
    bm, bn = block
    options = {}
    if num_warps:
        options["num_warps"] = num_warps
    if num_stages:
        options["num_stages"] = num_stages
    attention_kernel[(triton.cdiv(seq, bm), batch * heads)](
        q, k, v, o, seq, q.stride(1), q.stride(2), 1.0 / math.sqrt(dim),
        HEAD_DIM=dim, BLOCK_M=bm, BLOCK_N=bn, **options,
    )  # fmt: skip
    return o


def attention_bwd(q, k, v, grad_out, causal=False, blocks=(64, 64)):
    """dQ, dK, dV of section 10's FlashAttention-2 (forward saving L, then its backward) for
    (batch, heads, seq, dim) tensors: the forward runs once, the returned function runs the
    backward alone (what the benchmark times)."""
    import torch

    from gpu_utils.triton_tools import triton_backward

    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out = triton_backward.flash_attention(*leaves, causal=causal, blocks=blocks)
    return lambda: torch.autograd.grad(out, leaves, grad_out, retain_graph=True)


def bias_gelu(x, bias):
    """Chapter 12's small fused function (section 9)."""
    import torch

    return torch.nn.functional.gelu(x + bias) * 2.0


# --- measurements on the GPU ------------------------------------------------------------------


def _ms(fn) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=200))


def measure(parts: list[str]) -> dict:
    import torch
    import torch.nn.functional as F

    rows, extra = [], {}
    torch.manual_seed(12)
    if "softmax" in parts or "layernorm" in parts:
        x = torch.randn(ROWS, COLS, device="cuda")
        traffic = 2 * x.numel() * x.element_size()
        scratch = torch.empty_like(x)
        copy_gbps = traffic / (_ms(lambda: scratch.copy_(x)) * 1e-3) / 1e9
        if "softmax" in parts:
            torch.testing.assert_close(softmax(x), torch.softmax(x, dim=1))
            gbps = traffic / (_ms(lambda: softmax(x)) * 1e-3) / 1e9
            rows.append(share_row("softmax (fp32, 8192 x 4096)", gbps, "GB/s", copy_gbps, "copy_"))
        if "layernorm" in parts:
            w, b = torch.rand(COLS, device="cuda"), torch.rand(COLS, device="cuda")
            torch.testing.assert_close(
                layernorm(x, w, b), F.layer_norm(x, (COLS,), w, b), rtol=1e-4, atol=1e-4
            )
            gbps = traffic / (_ms(lambda: layernorm(x, w, b)) * 1e-3) / 1e9
            rows.append(
                share_row("layernorm (fp32, 8192 x 4096)", gbps, "GB/s", copy_gbps, "copy_")
            )
    if "matmul" in parts:
        n = MATMUL_N
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        torch.testing.assert_close(matmul(a, b), a @ b, rtol=2e-2, atol=2e-1)
        flops = 2 * n**3
        mine = flops / (_ms(lambda: matmul(a, b)) * 1e-3) / 1e12
        theirs = flops / (_ms(lambda: a @ b) * 1e-3) / 1e12
        rows.append(share_row("matmul (bf16, 4096^3)", mine, "TFLOP/s", theirs, "torch.matmul"))
        extra["matmul_config"] = str(matmul_tuned.best_config)
    if "attention" in parts:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        for dim in HEAD_DIMS:
            shape = (BATCH, HEADS, SEQ, dim)
            q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                expected = F.scaled_dot_product_attention(q, k, v)
                theirs_ms = _ms(lambda: F.scaled_dot_product_attention(q, k, v))  # noqa: B023
            block = (128, 64) if dim == 64 else (128, 32)
            torch.testing.assert_close(attention(q, k, v, block), expected, rtol=2e-2, atol=2e-2)
            mine_ms = _ms(lambda: attention(q, k, v, block))  # noqa: B023
            flops = 4 * BATCH * HEADS * SEQ * SEQ * dim
            rows.append(
                share_row(
                    f"attention fwd (bf16, seq {SEQ}, d {dim})",
                    flops / (mine_ms * 1e-3) / 1e12,
                    "TFLOP/s",
                    flops / (theirs_ms * 1e-3) / 1e12,
                    "SDPA flash",
                )
            )
    if "attention_bwd" in parts:
        rows += _attention_bwd_rows()
    if "inductor" in parts:
        from torch._inductor.utils import run_and_get_code

        x, bias = torch.randn(64, 128, device="cuda"), torch.randn(128, device="cuda")
        _, codes = run_and_get_code(torch.compile(bias_gelu), x, bias)
        extra["inductor_triton"] = codes[0] if codes else ""
    return {"rows": rows, **extra}


def _relative_error(got, want) -> float:
    return float((got.float() - want).abs().max() / want.abs().max())


def _attention_bwd_rows() -> list[dict]:
    """Section 10's attention backward against SDPA's flash backward, both in bfloat16, after
    both are compared with float32 gradients (SDPA's default backend on float32 copies)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    for dim in HEAD_DIMS:
        for causal in (False, True):
            shape = (BATCH, HEADS, SEQ, dim)
            q, k, v, grad_out = (
                torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(4)
            )
            exact = [t.float().requires_grad_() for t in (q, k, v)]
            F.scaled_dot_product_attention(*exact, is_causal=causal).backward(grad_out.float())
            blocks = (64, 64) if dim == 64 else (32, 64)
            mine = attention_bwd(q, k, v, grad_out, causal, blocks)
            leaves = [t.detach().requires_grad_() for t in (q, k, v)]
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
                theirs = lambda: torch.autograd.grad(out, leaves, grad_out, retain_graph=True)  # noqa: B023, E731
                theirs_errors = [
                    _relative_error(g, e.grad) for g, e in zip(theirs(), exact, strict=True)
                ]
                theirs_ms = _ms(theirs)
            mine_errors = [_relative_error(g, e.grad) for g, e in zip(mine(), exact, strict=True)]
            # bfloat16 keeps 8 bits of mantissa: allow a few times SDPA's own error
            assert max(mine_errors) < max(4 * max(theirs_errors), 2e-2), (
                mine_errors,
                theirs_errors,
            )
            mine_ms = _ms(mine)
            flops = 2.5 * 4 * BATCH * HEADS * SEQ * SEQ * dim / (2 if causal else 1)
            row = share_row(
                f"attention_bwd (bf16, seq {SEQ}, d {dim}{', causal' if causal else ''})",
                flops / (mine_ms * 1e-3) / 1e12,
                "TFLOP/s",
                flops / (theirs_ms * 1e-3) / 1e12,
                "SDPA flash backward",
            )
            row["max_relative_error"] = max(mine_errors)
            row["sdpa_max_relative_error"] = max(theirs_errors)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if gu.reference.refuse_without_gpu(torch_cuda=True):
        return 2
    import torch

    results = measure(args.parts)
    for row in results["rows"]:
        goal = f" (goal {row['goal']:.0%})" if row["goal"] else ""
        print(
            f"{row['kernel']:40} {row['value']:9.1f} {row['unit']:8} = {row['share']:5.0%} of "
            f"{row['against']} ({row['reference']:.1f}){goal}"
        )
    results["torch"], results["triton"] = torch.__version__, triton.__version__
    path = gu.reference.save(NAME, results)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
