"""The Triton reference kernel of ``gu.inference_kernels.int8_gemv`` (chapter 13, lab 13 part 2),
in a module of its own: importing it imports triton in the course's mode (the interpreter on the
simulator), and a checker's process that receives the kernel imports it by this name."""

from __future__ import annotations

from .exercises._triton import triton_module

triton = triton_module()  # sets TRITON_INTERPRET=1 on the simulator before triton loads
import triton.language as tl  # noqa: E402 - after the mode is set


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
