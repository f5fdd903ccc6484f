"""Every torch, triton and numba-cuda API the labs teach or the checkers rely on, held against the
installed versions. `make test` runs it under the CUDA 13 lock (torch 2.13, triton 3.7.1),
`make test-cu12` under the oldest supported set (torch 2.10, triton 3.6.0) and `make test-colab`
under Colab's dated set on Python 3.13 (torch 2.11, numba 0.61.2). The names were collected by
grepping notebooks/, solutions/ and gpu_utils/ for torch., triton., tl. and cuda. uses.

Where a version lacks an API, the doctor's table (gu.diagnostics.API_DIFFERENCES) says so and how
the course adapts; test_api_differences_are_true holds that table against the installed version.
"""

import importlib
import inspect

import numpy as np
import pytest
from numba import cuda, float32, int32

import gpu_utils as gu
from gpu_utils import diagnostics

torch = pytest.importorskip("torch")


def resolve(dotted: str):
    """The object at ``dotted`` ("torch.utils.checkpoint.checkpoint"): the longest importable
    module prefix, then attributes. Fails with the missing part and the installed version."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for i, name in enumerate(parts[cut:], start=cut):
            if not hasattr(obj, name):
                top = parts[0].replace("_", "-")
                pytest.fail(
                    f"{'.'.join(parts[:i])} has no {name!r} in {top} "
                    f"{diagnostics.installed_version(top)}: the course uses {dotted}"
                )
            obj = getattr(obj, name)
        return obj
    pytest.fail(f"cannot import {parts[0]}: the course uses {dotted}")


TORCH_APIS = [
    # chapter 08b (the primer), 11 and the capstone profile
    "torch.profiler.profile",
    "torch.profiler.record_function",
    "torch.profiler.ProfilerActivity.CPU",
    "torch.profiler.ProfilerActivity.CUDA",
    "torch.autograd.profiler_util.FunctionEvent",
    "torch.utils.checkpoint.checkpoint",
    "torch.autograd.graph.saved_tensors_hooks",
    "torch.autograd.Function",
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.cross_entropy",
    "torch.nn.functional.gelu",
    "torch.nn.functional.linear",
    "torch.nn.functional.mse_loss",
    "torch.nn.functional.pad",
    "torch.compile",
    "torch.autocast",
    "torch.cuda.mem_get_info",
    "torch.cuda.memory_stats",
    "torch.cuda.memory_summary",
    "torch.cuda.reset_peak_memory_stats",
    "torch.cuda.synchronize",
    "torch.cuda.device_count",
    # chapters 09-10 (data and model parallel), gu.memory's FSDP estimate
    "torch.distributed.all_reduce",
    "torch.distributed.destroy_process_group",
    "torch.distributed.is_nccl_available",
    "torch.distributed.device_mesh.init_device_mesh",
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed.optim",
    "torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker",
    "torch._subclasses.fake_tensor.FakeTensorMode",
    "torch._C._current_graph_task_id",
]

TRITON_APIS = [
    "triton.jit",
    "triton.autotune",
    "triton.heuristics",
    "triton.Config",
    "triton.cdiv",
    "triton.next_power_of_2",
    "triton.compile",
    "triton.compiler.ASTSource",
    "triton.backends.compiler.GPUTarget",
    "triton.runtime.jit.JITFunction",
    "triton.runtime.interpreter.InterpretedFunction",
] + [
    f"triton.language.{name}"
    for name in [
        "arange",
        "cdiv",
        "constexpr",
        "dot",
        "exp",
        "full",
        "load",
        "log",
        "max",
        "maximum",
        "minimum",
        "program_id",
        "sqrt",
        "store",
        "sum",
        "trans",
        "where",
        "zeros",
        "float16",
        "float32",
        "bfloat16",
        "int32",
    ]
]

NUMBA_APIS = [
    f"numba.cuda.{name}"
    for name in ["jit", "to_device", "device_array", "device_array_like", "event", "synchronize"]
] + [
    # private parts of numba-cuda's simulator that gu.warp and gu.trace patch (_numba_sim)
    "numba.cuda.simulator.kernel.BlockThread",
    "numba.cuda.simulator.kernel.FakeCUDAKernel",
    "numba.cuda.simulator.kernel._push_kernel_context",
    "numba.cuda.simulator.kernelapi.FakeCUDAModule",
    "numba.cuda.simulator.kernelapi.FakeCUDAAtomic",
    "numba.cuda.simulator.kernelapi.Dim3",
    "numba.cuda.simulator.kernelapi.swapped_cuda_module",
    "numba.cuda.np.numpy_support",
    "numba.cuda.errors.normalize_kernel_dimensions",
    "numba.cuda.core.errors.NumbaPerformanceWarning",
]

#: Warp intrinsics chapter 05 teaches: the simulator has them once gu.warp installs them.
WARP_INTRINSICS = [
    "laneid",
    "warpsize",
    "shfl_down_sync",
    "shfl_xor_sync",
    "syncwarp",
    "activemask",
]


@pytest.mark.parametrize("dotted", TORCH_APIS)
def test_torch_api_exists(dotted):
    resolve(dotted)


@pytest.mark.parametrize("dotted", TRITON_APIS)
def test_triton_api_exists(dotted):
    pytest.importorskip("triton")
    resolve(dotted)


@pytest.mark.parametrize("dotted", NUMBA_APIS)
def test_numba_cuda_api_exists(dotted):
    resolve(dotted)


def test_kernel_intrinsics_run():
    """The intrinsics chapters 03-06 teach, in one kernel that runs (simulator or GPU)."""

    @cuda.jit
    def kernel(out, total):
        cache = cuda.shared.array(4, dtype=float32)
        scratch = cuda.local.array(1, dtype=int32)
        i, stride = cuda.grid(1), cuda.gridsize(1)
        tx = cuda.threadIdx.x
        scratch[0] = cuda.blockIdx.x * cuda.blockDim.x + tx
        cache[tx] = 1.0
        cuda.syncthreads()
        if i < out.size:
            out[i] = scratch[0] - i + stride - cuda.gridDim.x * cuda.blockDim.x + cache[3 - tx]
        cuda.atomic.add(total, 0, 1)

    out, total = cuda.to_device(np.zeros(8, np.float32)), cuda.to_device(np.zeros(1, np.int32))
    kernel[2, 4](out, total)
    cuda.synchronize()
    assert out.copy_to_host().tolist() == [1.0] * 8
    assert total.copy_to_host().tolist() == [8]


def test_warp_intrinsics_reach_the_simulator():
    if gu.mode == "gpu":
        pytest.skip("a real GPU compiles the intrinsics; the simulator is not used")
    from numba.cuda.simulator import kernelapi

    from gpu_utils.sim import warp

    assert warp.install()
    missing = [n for n in WARP_INTRINSICS if not hasattr(kernelapi.FakeCUDAModule, n)]
    assert not missing, f"the simulator's cuda module lacks {missing} after gu.warp.install()"


def test_checkpoint_takes_use_reentrant():
    """Chapter 11 and gu.gpt call checkpoint(..., use_reentrant=False)."""
    from torch.utils.checkpoint import checkpoint

    assert "use_reentrant" in inspect.signature(checkpoint).parameters
    x = torch.ones(3, requires_grad=True)
    checkpoint(lambda t: (t * 2).sum(), x, use_reentrant=False).backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def _profiled_events():
    a = torch.ones(8, 8)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True
    ) as prof:
        torch.mm(a, a)
    return [e for e in prof.events() if e.name == "aten::mm"], prof


def test_profiler_events_have_what_lab_11_reads():
    """Lab 11's profile-first exercise and its checker read these from prof.events() and
    prof.key_averages() (gpu_utils/exercises/ch11_profile.py)."""
    events, prof = _profiled_events()
    assert events, "torch.profiler recorded no aten::mm event for torch.mm"
    event = events[0]
    for name in ("name", "key", "cpu_time_total", "self_cpu_time_total", "input_shapes"):
        assert hasattr(event, name), f"torch {torch.__version__} FunctionEvent has no {name}"
    assert event.input_shapes[:2] == [[8, 8], [8, 8]]
    averages = prof.key_averages(group_by_input_shape=True)
    assert any(avg.key == "aten::mm" for avg in averages)


def test_api_differences_are_true():
    """The doctor's table names what each supported version lacks: hold it against this one."""
    events, _ = _profiled_events()
    attribute = diagnostics.API_DIFFERENCES["FunctionEvent.input_dtypes"]
    lacks = diagnostics.lacks("FunctionEvent.input_dtypes")
    has = hasattr(events[0], "input_dtypes")
    assert has != lacks, (
        f"torch {torch.__version__}: FunctionEvent.input_dtypes "
        f"{'exists' if has else 'is missing'}, but the doctor's table says "
        f"{attribute['since']} and later have it"
    )
    if has:
        assert [str(d) for d in events[0].input_dtypes[:2]] == ["float", "float"]


def test_lab_11_gets_input_dtypes_on_every_supported_torch():
    """Where torch lacks FunctionEvent.input_dtypes, the course adds them (the doctor's table
    says so): gu.capstone_profile.add_input_dtypes, which lab 11's profile uses."""
    from gpu_utils.many_gpus import capstone_profile

    _, prof = _profiled_events()
    capstone_profile.add_input_dtypes(prof)
    mm = [e for e in prof.events() if e.name == "aten::mm"]
    assert [str(d) for d in mm[0].input_dtypes[:2]] == ["float", "float"], (
        f"torch {torch.__version__}: lab 11 cannot read the matmul's dtypes"
    )
