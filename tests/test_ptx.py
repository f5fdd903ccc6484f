"""gu.ptx: PTX and ptxas' register count without a GPU, from a process running the simulator."""

from importlib import metadata

import pytest
from numba import cuda

import gpu_utils as gu
from conftest import ROOT

SIGNATURE = "void(float32, float32[::1], float32[::1], float32[::1])"


@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def test_ptx_and_registers_for_a_kernel():
    # Also the CI guard for the compiler: this compiles with numba-cuda's real CUDA path (NVVM, in a
    # child process without the simulator), so a NumPy or numba-cuda that breaks compiled kernels
    # (as NumPy 2.5 does with numba-cuda 0.30.4) fails here, not only on a GPU.
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


def _pins(lock):
    pins = {}
    for line in (ROOT / "requirements" / lock).read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            pins[name.split("[")[0].strip().lower()] = version.strip()
    return pins


def test_the_compiler_above_ran_under_a_locked_set():
    """numpy, numba and numba-cuda here are the versions of one of the locks, so the compilation
    test checks what learners install (CI installs a lock)."""
    installed = {p: metadata.version(p) for p in ("numpy", "numba", "numba-cuda")}
    locks = {lock: _pins(lock) for lock in ("course.txt", "course-cu12.txt")}
    matching = [
        lock for lock, pins in locks.items() if all(pins[p] == v for p, v in installed.items())
    ]
    assert matching, f"installed {installed}; the locks pin {locks['course.txt']}: run `make lab`"


def test_ptx_compiles_when_numpy_lacks_row_stack(monkeypatch):
    """NumPy 2.5 (simulated: its row_stack deleted in the child) with numba-cuda 0.30: the child
    imports gpu_utils first, whose stub lets numba-cuda compile (see gpu_utils.runtime)."""
    monkeypatch.setattr(gu.ptx, "_CHILD", "import numpy\ndel numpy.row_stack\n" + gu.ptx._CHILD)
    compiled = gu.ptx.compile_kernel(axpy, SIGNATURE, compute_capability=(8, 0))
    assert ".entry axpy(" in compiled.ptx
