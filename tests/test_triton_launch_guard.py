"""Direct launches in Triton's interpreter are checked as ``check()`` checks them (issue 27, 1).

Before the guard, issue 27's reproduction (chapter 12's unmasked add launched 20 times in one
process) crashed the process (abort or hang) in 3 of 3 runs; now each launch raises
``LaunchOutOfBounds`` naming the tensor, the offsets, the program and the line.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("GPU_COURSE_MODE", "simulator")
import gpu_utils
from gpu_utils import runtime

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

if os.environ.get("TRITON_INTERPRET") != "1":  # pragma: no cover - GPU sessions
    pytest.skip("these launch kernels in Triton's interpreter", allow_module_level=True)


@triton.jit
def add_unmasked(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets)  # no mask
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, x + y)


@triton.jit
def add_masked(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def store_past_end(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements)
    tl.store(out_ptr + offsets + 1, x, mask=offsets < n_elements)  # one past the end


@triton.jit
def count_atomic(out_ptr, BLOCK_SIZE: tl.constexpr):
    offsets = tl.arange(0, BLOCK_SIZE)
    tl.atomic_add(out_ptr + offsets, 1)


def _vectors(n=1000):
    return torch.rand(n), torch.rand(n), torch.empty(n)


def test_unmasked_load_raises_with_tensor_offsets_program_and_line():
    x, y, out = _vectors()
    with pytest.raises(runtime.LaunchOutOfBounds) as raised:
        add_unmasked[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK_SIZE=256)
    text = str(raised.value)
    assert "Program (3, 0, 0) read outside `x_ptr`" in text
    assert "1000 to 1023" in text and "valid offsets are 0 to 999" in text
    assert "`x = tl.load(x_ptr + offsets)  # no mask`" in text
    assert "mask=" in text and "site-packages" not in text and "gpu_utils" not in text
    assert isinstance(raised.value, IndexError)


def test_twenty_direct_launches_each_raise_and_none_crashes():
    x, y, out = _vectors()
    for _ in range(20):
        with pytest.raises(runtime.LaunchOutOfBounds):
            add_unmasked[(4,)](x, y, out, 1000, BLOCK_SIZE=256)


def test_masked_launch_runs_unchanged_with_keyword_and_launch_options():
    x, y, out = _vectors()
    add_masked[(4,)](x, y, out, n_elements=1000, BLOCK_SIZE=256, num_warps=4)
    assert torch.equal(out, x + y)


def test_grid_as_a_function_and_exact_fit():
    x, y, out = _vectors(1024)
    add_unmasked[lambda meta: (triton.cdiv(1024, meta["BLOCK_SIZE"]),)](x, y, out, 1024, 256)
    assert torch.equal(out, x + y)


def test_store_past_the_end_names_the_output():
    x, _, out = _vectors(100)
    with pytest.raises(runtime.LaunchOutOfBounds, match=r"wrote outside `out_ptr`.*offset 100"):
        store_past_end[(1,)](x, out, 100, BLOCK_SIZE=128)


def test_atomic_past_the_end_is_caught():
    out = torch.zeros(10)
    with pytest.raises(runtime.LaunchOutOfBounds, match="atomically"):
        count_atomic[(1,)](out, BLOCK_SIZE=16)
    count = torch.zeros(16)
    count_atomic[(3,)](count, BLOCK_SIZE=16)
    assert torch.equal(count, torch.full((16,), 3.0))


def test_a_checker_launch_is_not_guarded_twice():
    result = gpu_utils.exercises.check("triton_vector_add", add_masked)
    assert result.passed, result.message
    result = gpu_utils.exercises.check("triton_vector_add", add_unmasked)
    assert not result.passed and "outside `x_ptr`" in result.message


def test_the_hook_is_installed_once_and_reports_it():
    from triton.runtime import interpreter

    assert getattr(interpreter.InterpretedFunction.run, "gpu_course_patched", False)
    assert runtime.patch_triton_launch(interpreter) is False


@triton.jit
def count_under_a_lock(lock_ptr, count_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:  # Triton's tutorial 05 takes its lock this way
        pass
    tl.store(count_ptr, tl.load(count_ptr) + 1)
    tl.atomic_xchg(lock_ptr, 0)


def test_a_spin_lock_taken_with_atomic_cas_runs_under_the_guard():
    # the guard checks an atomic_cas as an unmasked access; it once built that mask without a
    # dtype, and every tl.atomic_cas in simulator mode failed inside the interpreter
    lock = torch.zeros(1, dtype=torch.int32)
    count = torch.zeros(1, dtype=torch.int32)
    count_under_a_lock[(5,)](lock, count)
    assert count.item() == 5 and lock.item() == 0
