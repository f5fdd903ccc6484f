"""benchmarks/ch12_triton.py: it refuses on the simulator (its timings would say nothing about a
GPU), checks its arguments, and its kernels are right: run here in Triton's interpreter at tiny
sizes against PyTorch (float16 where the GPU run uses bfloat16: this Triton's interpreter
computes `tl.dot` on bfloat16 wrongly)."""

import math

import pytest

pytest.importorskip("triton")

import ch12_triton  # benchmarks/ch12_triton.py, on the path through pyproject.toml
import torch

import gpu_utils as gu

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="simulator-side checks")


def test_it_refuses_on_the_simulator_and_writes_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_COURSE_REFERENCE_OUT", str(tmp_path))
    assert ch12_triton.main([]) == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_arguments_choose_parts_and_reject_unknown_ones(capsys):
    assert ch12_triton.parse_args([]).parts == list(ch12_triton.PARTS)
    assert ch12_triton.parse_args(["--only", "softmax, matmul"]).parts == ["softmax", "matmul"]
    with pytest.raises(SystemExit) as stopped:
        ch12_triton.parse_args(["--only", "softmax,flash"])
    assert stopped.value.code == 2
    assert "unknown part(s) flash" in capsys.readouterr().err


def test_a_row_carries_its_share_and_goal():
    row = ch12_triton.share_row("matmul (bf16, 4096^3)", 560.0, "TFLOP/s", 700.0, "torch.matmul")
    assert row["share"] == pytest.approx(0.8) and row["goal"] == 0.7
    assert ch12_triton.share_row("inductor", 1.0, "x", 2.0, "y")["goal"] is None


def test_the_kernels_equal_torch_in_the_interpreter():
    torch.manual_seed(0)
    x = 10 * torch.randn(8, 100)
    torch.testing.assert_close(ch12_triton.softmax(x), torch.softmax(x, dim=1))
    w, b = torch.rand(100), torch.rand(100)
    torch.testing.assert_close(
        ch12_triton.layernorm(x, w, b),
        torch.nn.functional.layer_norm(x, (100,), w, b),
        rtol=1e-4,
        atol=1e-4,
    )
    wide = 10 * torch.randn(8, 160)  # a strided view: rows 160 apart, 100 long; out is dense
    view = wide[:, 30:130]
    torch.testing.assert_close(ch12_triton.softmax(view), torch.softmax(view, dim=1))
    torch.testing.assert_close(
        ch12_triton.layernorm(view, w, b),
        torch.nn.functional.layer_norm(view, (100,), w, b),
        rtol=1e-4,
        atol=1e-4,
    )
    a, bm = torch.randn(48, 64).half(), torch.randn(64, 40).half()
    product = ch12_triton.matmul(a, bm, tuned=False, block=(16, 32, 32))
    torch.testing.assert_close(product, (a.float() @ bm.float()).half(), rtol=2e-3, atol=2e-3)
    q, k, v = (torch.randn(1, 2, 40, 16).half() for _ in range(3))
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), scale=1 / math.sqrt(16)
    )
    got = ch12_triton.attention(q, k, v, block=(16, 16))
    torch.testing.assert_close(got.float(), expected, rtol=3e-3, atol=3e-3)


def test_the_attention_backward_equals_autograd_in_the_interpreter():
    """The launcher the GPU run times (section 10's kernels), float16 where the GPU run uses
    bfloat16, causal and not, a sequence that is not a multiple of the blocks."""
    from gpu_utils.triton_tools import triton_backward

    torch.manual_seed(1)
    q, k, v, grad_out = (torch.randn(1, 2, 40, 16).half() for _ in range(4))
    for causal in (False, True):
        grads = ch12_triton.attention_bwd(q, k, v, grad_out, causal, blocks=(16, 16))()
        leaves = [t.float().requires_grad_() for t in (q, k, v)]
        triton_backward.attention_reference(*leaves, causal=causal).backward(grad_out.float())
        for got, leaf in zip(grads, leaves, strict=True):
            torch.testing.assert_close(got.float(), leaf.grad, rtol=3e-3, atol=3e-3)


def test_the_attention_backward_rows_carry_no_goal():
    row = ch12_triton.share_row("attention_bwd (bf16, seq 4096, d 64)", 1.0, "TFLOP/s", 2.0, "x")
    assert row["goal"] is None and "attention_bwd" in ch12_triton.PARTS
