"""Mode selection: chosen once, before numba; overridable; a wrong import order is explained."""

import os
import subprocess
import sys

import pytest

import gpu_utils as gu


def _python(code: str, **env) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM",)}
    full_env.pop("GPU_COURSE_MODE", None)
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120
    )


def test_mode_is_known_and_sets_the_simulator_flag():
    assert gu.mode in ("gpu", "simulator")
    if gu.mode == "simulator":
        assert os.environ["NUMBA_ENABLE_CUDASIM"] == "1"
        from numba import config

        assert config.ENABLE_CUDASIM


def test_pick_follows_the_mode():
    assert gu.pick(gpu="big", simulator="small") == ("big" if gu.mode == "gpu" else "small")


def test_override_forces_the_simulator():
    out = _python("import gpu_utils as gu; print(gu.mode)", GPU_COURSE_MODE="simulator")
    assert out.stdout.strip() == "simulator"


def test_bad_override_says_what_to_do():
    out = _python("import gpu_utils", GPU_COURSE_MODE="tpu")
    assert out.returncode != 0
    assert "use 'gpu' or 'simulator'" in out.stderr


def test_numba_imported_first_in_the_wrong_mode_is_explained():
    code = "import numba; import gpu_utils as gu; print(gu.runtime.mode_conflict is not None)"
    out = _python(code, GPU_COURSE_MODE="simulator")
    assert out.stdout.strip() == "True"
    assert "numba was imported before gpu_utils" in out.stderr
    assert "make `import gpu_utils as gu` the first import" in out.stderr


def test_numba_imported_first_in_the_right_mode_is_fine():
    code = "import numba; import gpu_utils as gu; print(gu.runtime.mode_conflict)"
    out = _python(code, GPU_COURSE_MODE="simulator", NUMBA_ENABLE_CUDASIM="1")
    assert out.stdout.strip() == "None"
    assert "imported before" not in out.stderr


def test_importing_gpu_utils_does_not_import_numba():
    out = _python("import sys, gpu_utils; print('numba' in sys.modules)")
    assert out.stdout.strip() == "False"


def test_device_info_is_honest():
    info = gu.device_info()
    if gu.mode == "simulator":
        assert info.name in ("the course's CUDA simulator", "Numba CUDA simulator")
        assert "not GPU timings" in info.notes
        assert info.peak_bandwidth is None and info.spec is None
    else:
        assert info.sm_count and info.memory_bytes and info.compute_capability


def test_banner_names_the_mode():
    assert gu.banner().startswith("Mode: simulator" if gu.mode == "simulator" else "Mode: GPU")


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError):
        gu.no_such_module  # noqa: B018


@pytest.mark.gpu
def test_gpu_device_info_matches_a_spec_when_known():
    info = gu.device_info()
    assert info.peak_bandwidth and info.peak_bandwidth > 1e11


def test_runtime_depends_on_nothing_in_the_package():
    """At import, runtime loads nothing of the package (it must run before numba is imported);
    only the launch guard imports the checkers' engine, lazily, when a kernel is launched."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(gu.runtime))
    lazy = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef) and function.name == "patch_triton_launch"
        for node in ast.walk(function)
    }
    relative = [
        (node.module, [alias.name for alias in node.names])
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level
    ]
    named = [
        (alias.name, id(node) in lazy)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
        if (getattr(node, "module", None) or alias.name).startswith("gpu_utils")
    ]
    # the one exception: the driver probe, a leaf of the standard library only (below)
    assert relative == [("driver", ["probe"])]
    assert named == [("OutOfBounds", True), ("guarded", True)]
    driver = ast.parse(inspect.getsource(gu.driver))
    imported = [
        name
        for node in ast.walk(driver)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
        )
    ]
    assert sorted(imported) == ["__future__", "ctypes"]


def test_the_banner_lives_with_the_device_description():
    assert gu.banner is gu.device.banner
    assert gu.banner() == gu.device.banner()


def test_the_package_sets_up_the_warp_intrinsics_in_simulator_mode():
    code = (
        "import gpu_utils; from numba import cuda; "
        "from numba.cuda.simulator import kernelapi; "
        "print(hasattr(kernelapi.FakeCUDAModule, 'shfl_sync'))"
    )
    out = _python(code, GPU_COURSE_MODE="simulator")
    assert out.stdout.strip() == "True", out.stderr


def test_simulator_mode_runs_triton_in_its_interpreter():
    code = "import os, gpu_utils; print(os.environ.get('TRITON_INTERPRET'))"
    assert _python(code, GPU_COURSE_MODE="simulator").stdout.strip() == "1"


def test_gpu_mode_leaves_triton_compiling_for_the_gpu():
    code = "import os, gpu_utils; print(os.environ.get('TRITON_INTERPRET'))"
    out = _python(code, GPU_COURSE_MODE="gpu", TRITON_INTERPRET="1")
    assert out.stdout.strip() == "None", out.stderr


def test_a_triton_kernel_runs_on_the_cpu_in_simulator_mode():
    pytest.importorskip("triton")
    code = """
import gpu_utils, torch, triton, triton.language as tl
@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)
x = torch.arange(10.0)
out = torch.full((10,), float("nan"))
add[(1,)](x, x, out, 10, BLOCK=16)
print(out.tolist() == (2 * x).tolist())
"""
    out = _python(code, GPU_COURSE_MODE="simulator")
    assert out.stdout.strip() == "True", out.stderr[-2000:]


# --- numpy.row_stack: numba-cuda 0.30 registers it; NumPy 2.5 removed it (NVIDIA/numba-cuda#907) ---

# Compiles a kernel to PTX with numba-cuda's real compiler (NVVM, no GPU needed), as a GPU run does.
COMPILE = """
import numpy
{before}
import numba
from numba import cuda
def kernel(x):
    x[0] = 1.0
try:
    ptx, _ = cuda.compile_ptx(kernel, (numba.float32[::1],), cc=(8, 0))
    print("compiled" if ".entry" in ptx else "no entry")
except AttributeError as error:
    print("failed:", error)
"""
# NumPy 2.5 without its row_stack, simulated on the installed NumPy (Python 3.11 has no NumPy 2.5).
NUMPY_2_5 = "del numpy.row_stack"


def _compile(before: str, **env) -> subprocess.Popen:
    full_env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    full_env.update(env)
    code = COMPILE.format(before=before)
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full_env,
    )


def test_the_row_stack_stub_lets_numba_cuda_compile_without_numpys_row_stack():
    # Three compilers at once (each spends seconds importing numba): without the stub the
    # simulated NumPy 2.5 breaks compilation, as on the H100; gpu_utils imported first fixes it,
    # and so does gpu_utils imported after numba (the stub is added at once).
    runs = {
        "bare": _compile(NUMPY_2_5),
        "first": _compile(NUMPY_2_5 + "\nimport gpu_utils", GPU_COURSE_MODE="gpu"),
        "after": _compile(
            NUMPY_2_5 + "\nimport numba\nimport gpu_utils\nprint(gpu_utils.runtime.row_stack_stub)",
            GPU_COURSE_MODE="gpu",
        ),
    }
    out = {name: run.communicate(timeout=300) for name, run in runs.items()}
    assert "failed: module 'numpy' has no attribute 'row_stack'" in out["bare"][0], out["bare"]
    assert out["first"][0].strip() == "compiled", out["first"]
    assert out["after"][0].split() == ["True", "compiled"], out["after"]


def test_the_stub_is_never_numpys_function_and_says_what_to_use(monkeypatch):
    import numpy

    monkeypatch.setattr(gu.runtime, "row_stack_stub", False)
    if hasattr(numpy, "row_stack") and not gu.runtime.row_stack_stub:
        # This NumPy has the real function: the stub leaves it alone.
        real = numpy.row_stack
        assert gu.runtime.add_row_stack_stub() is False and numpy.row_stack is real
    monkeypatch.delattr(numpy, "row_stack", raising=False)
    assert gu.runtime.add_row_stack_stub() is True
    with pytest.raises(AttributeError, match=r"use numpy\.vstack"):
        numpy.row_stack(([1], [2]))
    assert numpy.row_stack.gpu_course_stub


def test_no_stub_with_a_numba_cuda_that_no_longer_needs_it(monkeypatch):
    import numpy

    monkeypatch.delattr(numpy, "row_stack", raising=False)
    monkeypatch.setattr(gu.runtime, "_release", lambda package: (0, 31))
    assert gu.runtime.add_row_stack_stub() is False
    assert not hasattr(numpy, "row_stack")


def test_importing_gpu_utils_imports_neither_numpy_nor_numba():
    out = _python("import sys, gpu_utils; print('numpy' in sys.modules, 'numba' in sys.modules)")
    assert out.stdout.split() == ["False", "False"], out.stderr


class _Scope:
    """Stands in for Triton's _LangPatchScope: records what the interpreter sets on a tensor."""

    def __init__(self):
        self.attrs = {}

    def set_attr(self, obj, name, value):
        self.attrs[name] = value


def _fake_interpreter():
    import types

    module = types.ModuleType("fake_interpreter")

    def _patch_lang_tensor(tensor, scope):  # Triton 3.6's line
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))

    module._patch_lang_tensor = _patch_lang_tensor
    return module


def test_triton_3_6s_interpreter_gets_3_7s_index(monkeypatch):
    import types

    import numpy as np

    from gpu_utils import runtime

    monkeypatch.setattr(runtime, "_release", lambda name: (3, 6) if name == "triton" else None)
    module = _fake_interpreter()
    assert runtime.patch_triton_index(module)
    assert not runtime.patch_triton_index(module)  # once only
    scope = _Scope()
    module._patch_lang_tensor(object, scope)
    block = types.SimpleNamespace(handle=types.SimpleNamespace(data=np.array([7])))
    assert scope.attrs["__index__"](block) == 7


def test_triton_3_7_and_newer_are_left_alone(monkeypatch):
    from gpu_utils import runtime

    monkeypatch.setattr(runtime, "_release", lambda name: (3, 7) if name == "triton" else None)
    module = _fake_interpreter()
    original = module._patch_lang_tensor
    assert not runtime.patch_triton_index(module)
    assert module._patch_lang_tensor is original
