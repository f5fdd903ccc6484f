"""gu.ptx: PTX and ptxas' register count without a GPU, from a process running the simulator."""

import pytest
from numba import cuda

import gpu_utils as gu

SIGNATURE = "void(float32, float32[::1], float32[::1], float32[::1])"


@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def test_ptx_and_registers_for_a_kernel():
    compiled = gu.ptx.compile_kernel(axpy, SIGNATURE, compute_capability=(8, 0))
    assert ".target sm_80" in compiled.ptx
    assert ".entry axpy(" in compiled.ptx and "_ZN" not in compiled.ptx
    assert any(line.startswith("fma.rn.f32") for line in compiled.instructions)
    assert compiled.instructions[-1] == "ret;"
    assert sum(compiled.declared_registers.values()) >= 4  # names vary with the NVVM version
    if compiled.registers is None:
        pytest.skip(f"nvJitLink is not available here: {compiled.note}")
    assert 4 <= compiled.registers <= 255
    assert compiled.spill_bytes == 0
    assert "registers per thread after ptxas" in str(compiled)


def test_a_signature_that_does_not_fit_says_so():
    with pytest.raises(ValueError, match=r"did not compile.*signature lists one type"):
        gu.ptx.compile_kernel(axpy, "void(float32)")


def test_only_functions_compile():
    with pytest.raises(ValueError, match="needs a kernel"):
        gu.ptx.compile_kernel(42, SIGNATURE)
