"""gu.occupancy reproduces NVIDIA's published worked examples, the per-SM limits of the CUDA C++
Programming Guide, and NVIDIA's own calculator (cuda_occupancy.h) on a grid of launches."""

import glob
import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from numba import cuda, float32

import gpu_utils as gu
from gpu_utils.one_gpu import occupancy as occ
from gpu_utils.one_gpu.occupancy import KB, occupancy

# --- NVIDIA's worked examples -------------------------------------------------------------------


def test_best_practices_guide_37_registers_128_threads():
    # CUDA C++ Best Practices Guide, "Calculating Occupancy": "on a device of compute capability
    # 7.0, a kernel with 128-thread blocks using 37 registers per thread results in an occupancy
    # of 75% with 12 active 128-thread blocks per multi-processor".
    result = occupancy(128, 37, compute_capability=(7, 0))
    assert result.blocks_per_sm == 12
    assert result.occupancy == pytest.approx(0.75)
    assert result.limiter == "registers"


def test_best_practices_guide_37_registers_320_threads():
    # Same passage: "whereas a kernel with 320-thread blocks using the same 37 registers per thread
    # results in an occupancy of 63% because only four 320-thread blocks can reside on a
    # multiprocessor" (40 of 64 warps = 62.5%, printed rounded).
    result = occupancy(320, 37, compute_capability=(7, 0))
    assert result.blocks_per_sm == 4
    assert result.occupancy == 0.625  # the guide's "63%", rounded half up
    assert result.active_warps == 40
    assert result.limiter == "registers"


def test_best_practices_guide_32_registers_allow_full_occupancy():
    # Same passage: on compute capability 7.0 (65,536 registers, 2048 resident threads), "for a
    # multiprocessor to have 100% occupancy, each thread can use at most 32 registers".
    assert occupancy(256, 32, compute_capability=(7, 0)).occupancy == 1.0
    assert occupancy(256, 33, compute_capability=(7, 0)).occupancy < 1.0
    # "register allocations are rounded up to the nearest 256 registers per warp": 37 x 32 = 1184
    assert occupancy(128, 37, compute_capability=(7, 0)).registers_per_warp == 1280


@pytest.mark.parametrize("cc", [(7, 0), (8, 0), (9, 0)])
def test_programming_guide_64_vs_65_registers(cc):
    # CUDA C++ Programming Guide, "Multiprocessor Level": "if a kernel uses 64 registers and each
    # block has 512 threads and requires very little shared memory, then two blocks (i.e., 32
    # warps) can reside on the multiprocessor ... as soon as the kernel uses one more register,
    # only one block (i.e., 16 warps) can be resident". The guide states it for compute capability
    # 6.x; the figures it rests on (65,536 registers per SM, 256-register allocation per warp,
    # four sub-partitions, 64 resident warps) are the same on 7.0, 8.0 and 9.0.
    two = occupancy(512, 64, compute_capability=cc)
    assert (two.blocks_per_sm, two.active_warps) == (2, 32)
    one = occupancy(512, 65, compute_capability=cc)
    assert (one.blocks_per_sm, one.active_warps) == (1, 16)
    assert one.limiter == "registers"


@pytest.mark.parametrize("cc, max_kb", [((8, 0), 163), ((8, 6), 99), ((8, 9), 99), ((9, 0), 227)])
def test_programming_guide_reserved_shared_memory(cc, max_kb):
    # CUDA C++ Programming Guide, compute capabilities 8.x and 9.0: the largest block allocation
    # is 1 KB below the SM's shared memory (164/100/228 KB) because "the 1 KB of shared memory not
    # made available to a thread is reserved for system use".
    sm = occ.limits(cc)
    assert sm.max_shared_mem_per_block == max_kb * KB == sm.shared_mem_per_sm - KB
    assert occupancy(128, 32, max_kb * KB, cc).blocks_per_sm == 1
    half = (sm.shared_mem_per_sm // 2) - KB  # two such blocks plus their reserve fill the SM
    assert occupancy(128, 32, half, cc).blocks_per_sm == 2
    assert occupancy(128, 32, half + 1, cc).blocks_per_sm == 1
    assert occupancy(128, 32, half + 1, cc).limiter == "shared memory"
    with pytest.raises(ValueError, match="shared memory"):
        occupancy(128, 32, max_kb * KB + 1, cc)


def test_volta_has_no_reserved_shared_memory():
    # Compute capability 7.0: up to 96 KB per block, and two 48 KB blocks fill the SM.
    assert occupancy(128, 32, 48 * KB, (7, 0)).blocks_per_sm == 2
    assert occupancy(128, 32, 96 * KB, (7, 0)).blocks_per_sm == 1


# --- the Programming Guide's per-SM table -------------------------------------------------------

# (cc): (max warps/SM, max threads/SM, max blocks/SM, shared memory per SM in KB) from
# "Technical Specifications per Compute Capability".
PUBLISHED = {
    (7, 0): (64, 2048, 32, 96),
    (7, 2): (64, 2048, 32, 96),
    (7, 5): (32, 1024, 16, 64),
    (8, 0): (64, 2048, 32, 164),
    (8, 6): (48, 1536, 16, 100),
    (8, 7): (48, 1536, 16, 164),
    (8, 9): (48, 1536, 24, 100),
    (9, 0): (64, 2048, 32, 228),
}


@pytest.mark.parametrize("cc", list(PUBLISHED))
def test_limits_match_the_programming_guide(cc):
    sm = occ.limits(cc)
    warps, threads, blocks, smem_kb = PUBLISHED[cc]
    assert (sm.max_warps_per_sm, sm.max_threads_per_sm, sm.max_blocks_per_sm) == (
        warps,
        threads,
        blocks,
    )
    assert sm.shared_mem_per_sm == smem_kb * KB
    assert sm.registers_per_sm == 65536 and sm.max_registers_per_block == 65536
    assert sm.max_registers_per_thread == 255 and sm.max_threads_per_block == 1024
    assert sm.shared_mem_allocation_unit == (256 if cc[0] == 7 else 128)
    assert sm.reserved_shared_mem_per_block == (0 if cc[0] == 7 else KB)


def test_all_supported_capabilities_are_listed():
    assert occ.compute_capabilities() == list(PUBLISHED)
    assert occ.limits("8.6") is occ.limits((8, 6))


# --- limiters -----------------------------------------------------------------------------------


def test_small_blocks_hit_the_block_limit():
    result = occupancy(32, 32, compute_capability=(9, 0))
    assert result.blocks_per_sm == 32
    assert result.occupancy == 0.5
    assert result.limiter == "blocks" and result.limiters == ("blocks",)


def test_full_occupancy_reports_warps_first():
    result = occupancy(256, 32, compute_capability=(9, 0))
    assert result.occupancy == 1.0
    assert result.limiters == ("warps", "registers")
    assert result.limiter == "warps"


def test_a_block_needing_too_many_registers_cannot_launch():
    result = occupancy(1024, 65, compute_capability=(9, 0))
    assert result.blocks_per_sm == 0 and result.occupancy == 0.0
    assert result.limiter == "registers"
    assert "too many resources requested" in result.explain()


def test_turing_halves_the_resident_warps():
    result = occupancy(1024, 32, compute_capability=(7, 5))
    assert result.active_warps == 32 and result.occupancy == 1.0


def test_explain_shows_each_step():
    text = occupancy(320, 37, compute_capability=(7, 0)).explain()
    for part in ("ceil(320 / 32) = 10", "1184 per warp", "1280", "12 warps there, 48 per SM"):
        assert part in text, text
    assert "occupancy 62.5%, limited by registers" in text


def test_curve_covers_every_warp_multiple():
    curve = occ.occupancy_curve(37, compute_capability=(7, 0))
    assert [r.threads_per_block for r in curve] == list(range(32, 1025, 32))
    best = max(curve, key=lambda r: r.occupancy)
    assert best.occupancy == 0.75


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(threads_per_block=2000, registers_per_thread=32), "1 to 1024 threads"),
        (dict(threads_per_block=0, registers_per_thread=32), "1 to 1024 threads"),
        (dict(threads_per_block=256, registers_per_thread=300), "0 to 255"),
        (dict(threads_per_block=256.0, registers_per_thread=32), "whole number"),
        (dict(threads_per_block=256, registers_per_thread=32, shared_mem_per_block=-1), "0 to"),
        (
            dict(threads_per_block=256, registers_per_thread=32, compute_capability=(10, 0)),
            "not in this calculator's tables",
        ),
        (
            dict(threads_per_block=256, registers_per_thread=32, compute_capability=(6, 1)),
            "Pick one of those",
        ),
        (
            dict(threads_per_block=256, registers_per_thread=32, compute_capability="Hopper"),
            r"such as \(9, 0\)",
        ),
    ],
)
def test_bad_input_says_what_to_do(kwargs, message):
    with pytest.raises(ValueError, match=message):
        occupancy(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(threads_per_block=256, registers_per_thread=300),
        dict(threads_per_block=256, registers_per_thread=32, compute_capability="Hopper"),
    ],
)
def test_the_apis_an_error_names_exist(kwargs):
    with pytest.raises(ValueError) as error:
        occupancy(**kwargs)
    named = re.findall(r"\bgu\.(\w+)\.(\w+)", str(error.value))
    named += re.findall(r"\bgu\.(device_info)\(\)\.(\w+)", str(error.value))
    assert named, str(error.value)
    for module, name in named:
        owner = gu.device_info() if module == "device_info" else getattr(gu, module)
        assert hasattr(owner, name), f"{str(error.value)!r} names gu.{module}.{name}"


# --- NVIDIA's own calculator, cuda_occupancy.h --------------------------------------------------

_DRIVER = r"""
#include <cstdio>
#include "cuda_occupancy.h"
int main() {
    int major, minor, threads_sm, threads, regs;
    long smem_sm, optin, reserved, smem;
    while (scanf("%d %d %d %ld %ld %ld %d %d %ld", &major, &minor, &threads_sm, &smem_sm, &optin,
                 &reserved, &threads, &regs, &smem) == 9) {
        cudaOccDeviceProp prop;
        prop.computeMajor = major; prop.computeMinor = minor;
        prop.maxThreadsPerBlock = 1024; prop.maxThreadsPerMultiprocessor = threads_sm;
        prop.regsPerBlock = 65536; prop.regsPerMultiprocessor = 65536; prop.warpSize = 32;
        prop.sharedMemPerBlock = 48 * 1024; prop.sharedMemPerMultiprocessor = smem_sm;
        prop.numSms = 1; prop.sharedMemPerBlockOptin = optin;
        prop.reservedSharedMemPerBlock = reserved;
        cudaOccFuncAttributes attr;
        attr.maxThreadsPerBlock = 1024; attr.numRegs = regs; attr.sharedSizeBytes = 0;
        attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN; attr.maxDynamicSharedSizeBytes = optin;
        attr.numBlockBarriers = 1;
        cudaOccDeviceState state;
        cudaOccResult result;
        cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(
            &result, &prop, &attr, &state, threads, (size_t)smem);
        printf("%d %d %u\n", (int)err, result.activeBlocksPerMultiprocessor,
               result.limitingFactors);
    }
    return 0;
}
"""

_BITS = {"warps": 1, "registers": 2, "shared memory": 4, "blocks": 8}


def _header() -> Path | None:
    roots = [sys.prefix, os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    patterns = ["lib/python*/site-packages/nvidia/*/include", "include"]
    for root, pattern in itertools.product(roots, patterns):
        for folder in glob.glob(os.path.join(root, pattern)) if root else []:
            if (Path(folder) / "cuda_occupancy.h").exists():
                return Path(folder)
    return None


@pytest.fixture(scope="module")
def nvidia_calculator(tmp_path_factory):
    include, compiler = _header(), shutil.which("g++")
    if include is None or compiler is None:
        pytest.skip("needs cuda_occupancy.h (CUDA Toolkit or the cuda-toolkit wheel) and g++")
    folder = tmp_path_factory.mktemp("occ")
    (folder / "occ.cpp").write_text(_DRIVER)
    binary = folder / "occ"
    subprocess.run(
        [compiler, "-O1", "-I", str(include), "-o", str(binary), str(folder / "occ.cpp")],
        check=True,
        capture_output=True,
    )
    return binary


def test_matches_cuda_occupancy_h_on_a_grid(nvidia_calculator):
    threads = [1, 32, 33, 64, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1000, 1024]
    registers = [0, 16, 24, 32, 33, 37, 40, 48, 56, 64, 65, 72, 96, 128, 168, 255]
    # Shared memory in bytes, including sizes that are not multiples of the allocation unit.
    shared = [0, 100, 1000, 1024, 4100, 12345, 16 * KB, 32 * KB, 41 * KB, 41 * KB + 1, 48 * KB]
    shared += [49000, 64 * KB, 99 * KB, 100 * KB, 113 * KB, 113 * KB + 200, 163 * KB, 227 * KB]
    cases = []
    for cc in occ.compute_capabilities():
        sm = occ.limits(cc)
        for t, r, smem in itertools.product(threads, registers, shared):
            if smem <= sm.max_shared_mem_per_block:
                cases.append((sm, t, r, smem))
    lines = "".join(
        f"{sm.compute_capability[0]} {sm.compute_capability[1]} {sm.max_threads_per_sm} "
        f"{sm.shared_mem_per_sm} {sm.max_shared_mem_per_block} "
        f"{sm.reserved_shared_mem_per_block} {t} {r} {smem}\n"
        for sm, t, r, smem in cases
    )
    output = subprocess.run(
        [str(nvidia_calculator)], input=lines, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert len(cases) > 10_000
    for (sm, t, r, smem), line in zip(cases, output, strict=False):
        error, blocks, factors = (int(x) for x in line.split())
        ours = occupancy(t, r, smem, sm.compute_capability)
        case = f"cc {sm.name}, {t} threads, {r} registers, {smem} B"
        assert error == 0, case
        assert ours.blocks_per_sm == blocks, case
        assert sum(_BITS[name] for name in ours.limiters) == factors, case


# --- the driver of the GPU this runs on (GPU tier) ----------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("threads", [32, 96, 128, 256, 320, 1024])
@pytest.mark.parametrize("shared_floats", [0, 4096])
def test_agrees_with_the_driver_of_this_gpu(threads, shared_floats):
    info = gu.device_info()
    if info.compute_capability not in occ.compute_capabilities():
        pytest.skip(f"compute capability {info.compute_capability_str} is not in the tables")

    @cuda.jit
    def staged_copy(x, out):
        i = cuda.grid(1)
        if shared_floats:
            stage = cuda.shared.array(shared_floats, float32)
            stage[cuda.threadIdx.x] = x[i] if i < x.size else 0
            cuda.syncthreads()
            if i < out.size:
                out[i] = stage[cuda.threadIdx.x]
        elif i < out.size:
            out[i] = x[i]

    kernel = staged_copy.compile("void(float32[::1], float32[::1])")
    driver_blocks = kernel.max_cooperative_grid_blocks(threads) // info.sm_count
    ours = occupancy(
        threads, kernel.regs_per_thread, kernel.shared_mem_per_block, info.compute_capability
    )
    assert ours.blocks_per_sm == driver_blocks, ours.explain()


def test_plot_leaves_a_gap_where_a_block_cannot_launch():
    """Chapter 02's plot: a block size that cannot launch is marked, not drawn as 0 % occupancy."""
    import math

    import matplotlib.pyplot as plt

    ax = gu.widgets.occupancy_plot([32, 128], compute_capability=(9, 0))
    curves = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert [line.get_label() for line in curves] == ["32 reg", "128 reg"]
    assert not any(math.isnan(v) for v in curves[0].get_ydata())  # 32 registers: every size
    ys = dict(zip(curves[1].get_xdata(), curves[1].get_ydata(), strict=True))
    assert ys[512] == 25 and math.isnan(ys[544])  # 17 warps x 4,096 registers > 65,536
    assert any("no launch from 544 threads" in t.get_text() for t in ax.texts)
    legend_box = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    assert legend_box.x0 > 1  # outside the axes, so it covers no curve
    plt.close(ax.figure)
