"""What chapter 12 says about Triton's interpreter and ``tl.dot``, measured (issue 27, item 2).

On a GPU, ``tl.dot`` of two float32 blocks uses TF32 on the tensor cores by default
(``input_precision="tf32"``, Triton's ``triton.language.dot`` docs): each input keeps 10 of its
23 mantissa bits. The interpreter multiplies in full float32, so its error against a float64
product is that of float32 rounding, far below TF32's. bfloat16 ``tl.dot`` is not supported by
the interpreter (triton-lang/triton#11584); a direct launch with bfloat16 tensors warns.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("GPU_COURSE_MODE", "simulator")
import gpu_utils  # noqa: F401  (sets TRITON_INTERPRET=1 before any kernel is defined)

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

if os.environ.get("TRITON_INTERPRET") != "1":  # pragma: no cover - GPU sessions
    pytest.skip("these measure Triton's interpreter", allow_module_level=True)


@triton.jit
def _dot16(a_ptr, b_ptr, c_ptr):
    rows = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    c = tl.dot(tl.load(a_ptr + rows), tl.load(b_ptr + rows))
    tl.store(c_ptr + rows, c.to(c_ptr.dtype.element_ty))


def _tf32(a: np.ndarray) -> np.ndarray:
    """Round float32 to TF32 (10 mantissa bits), to nearest even, as a tensor core's input."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0xFFF + ((bits >> 13) & 1)) & ~np.uint64(0x1FFF)
    return bits.astype(np.uint32).view(np.float32)


def _inputs(dtype):
    generator = torch.Generator().manual_seed(27)
    a = torch.randn(16, 16, generator=generator)
    b = torch.randn(16, 16, generator=generator)
    return a.to(dtype), b.to(dtype)


def _launch(a, b, out_dtype=torch.float32):
    c = torch.empty(16, 16, dtype=out_dtype)
    _dot16[(1,)](a, b, c)
    return c


def test_interpreter_dot_is_full_float32_not_tf32():
    a, b = _inputs(torch.float32)
    exact = a.double().numpy() @ b.double().numpy()
    interpreted = np.abs(_launch(a, b).double().numpy() - exact).max()
    tf32 = _tf32(a.numpy()).astype(np.float64) @ _tf32(b.numpy()).astype(np.float64)
    tf32_error = np.abs(tf32 - exact).max()
    print(f"16x16 float32 dot: interpreter {interpreted:.2g}, TF32 inputs {tf32_error:.2g}")
    assert interpreted < 1e-5  # float32 rounding of 16 products
    assert tf32_error > 1e-3  # what a GPU's default tl.dot may differ by
    assert tf32_error > 100 * interpreted


def test_tf32_rounding_keeps_ten_mantissa_bits():
    assert _tf32(np.array([1 + 2**-10], np.float32))[0] == 1 + 2**-10
    assert _tf32(np.array([1 + 2**-11 + 2**-20], np.float32))[0] == 1 + 2**-10
    assert _tf32(np.array([1 + 2**-12], np.float32))[0] == 1


def test_bfloat16_dot_in_the_interpreter_is_not_the_product():
    a, b = _inputs(torch.bfloat16)
    exact = (a.double() @ b.double()).numpy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got = _launch(a, b).double().numpy()
        except Exception as error:  # the interpreter refusing bfloat16 is also "not supported"
            got, refused = None, error
        else:
            refused = None
    assert any("bfloat16" in str(w.message) and "11584" in str(w.message) for w in caught)
    if got is not None:
        error = np.nanmax(np.abs(got - exact)) if np.isfinite(got).any() else np.inf
        print(f"16x16 bfloat16 dot in the interpreter: max error {error:.3g}")
        assert not np.allclose(got, exact, rtol=2e-2, atol=2e-1), "bf16 dot now works: update ch12"
    else:
        print(f"bfloat16 dot refused: {type(refused).__name__}")


def test_float16_dot_matches_the_product():
    a, b = _inputs(torch.float16)
    exact = (a.double() @ b.double()).numpy()
    got = _launch(a, b).double().numpy()
    assert np.allclose(got, exact, rtol=1e-3, atol=1e-3)
