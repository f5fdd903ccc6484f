"""What the course is running on: the real GPU's properties, or an honest simulator description.

Taught in chapter 00 (the mode banner, :func:`banner`) and chapter 02 (reading a device query).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from functools import cache

from . import runtime
from .facts.specs import GpuSpec, match

#: Text for notebooks: how fast the simulator is, so sizes and waits make sense. The course's
#: engine (gpu_utils.sim, the default), measured on a 2-core CPU with ``python
#: benchmarks/sim_speed.py`` (2026-11-29, load 1.7): thread by thread 0.2 to 3 million threads/s
#: on the lab kernels; in lockstep (launches of 2,048 threads or more it can vouch for) 2 to 15
#: million, and 419,000 for a 256 x 256 tiled matmul (each thread 256 multiply-adds);
#: numba-cuda's (GPU_COURSE_SIM=numba): 156 to 8,800 threads/s in the same run.
SIMULATOR_SPEED_NOTE = (
    "The simulator runs about 0.1 to 15 million CUDA threads per second (fewer when each\n"
    "thread loops) on the CPU: its timings are not GPU timings."
)
NUMBA_SIMULATOR_SPEED_NOTE = (
    "The simulator runs about 10,000 CUDA threads per second, one block at a time,\n"
    "as Python threads on the CPU: its timings are not GPU timings."
)

#: Source of the theoretical-bandwidth formula used below.
BANDWIDTH_FORMULA_SOURCE = (
    "M. Harris, 'How to Implement Performance Metrics in CUDA C/C++', NVIDIA Technical Blog (2012): "
    "peak bandwidth = memory clock x 2 (double data rate) x bus width / 8"
)


@dataclass(frozen=True)
class DeviceInfo:
    """Properties of the device kernels run on. Fields a simulator does not have are None."""

    mode: str
    name: str
    compute_capability: tuple[int, int] | None = None
    sm_count: int | None = None
    memory_bytes: int | None = None
    memory_free_bytes: int | None = None
    sm_clock_hz: float | None = None
    memory_clock_hz: float | None = None
    memory_bus_bits: int | None = None
    l2_bytes: int | None = None
    max_threads_per_block: int | None = None
    max_shared_memory_per_block: int | None = None
    max_shared_memory_per_block_optin: int | None = None  # with cudaFuncSetAttribute opt-in
    registers_per_sm: int | None = None
    warp_size: int = 32
    driver_version: str | None = None
    runtime_version: str | None = None
    notes: str = ""

    @property
    def compute_capability_str(self) -> str:
        cc = self.compute_capability
        return f"{cc[0]}.{cc[1]}" if cc else "n/a"

    @property
    def peak_bandwidth(self) -> float | None:
        """Theoretical DRAM bandwidth in bytes/s from the clock and bus width (see the source)."""
        if self.memory_clock_hz and self.memory_bus_bits:
            return 2 * self.memory_clock_hz * self.memory_bus_bits / 8
        return None

    @property
    def spec(self) -> GpuSpec | None:
        """The published figures for this GPU, when ``gpu_utils.facts.specs`` knows it."""
        return match(self.name) if self.mode == "gpu" else None

    def summary(self) -> str:
        """A few readable lines, for notebooks and the doctor."""
        if self.mode != "gpu":
            return f"{self.name}: {self.notes}"
        gib = (self.memory_bytes or 0) / 2**30
        lines = [
            f"{self.name} (compute capability {self.compute_capability_str})",
            f"  {self.sm_count} SMs, {gib:.1f} GiB memory",
        ]
        if self.peak_bandwidth:
            lines.append(f"  theoretical memory bandwidth {self.peak_bandwidth / 1e9:,.0f} GB/s")
        lines.append(f"  driver CUDA {self.driver_version}, runtime CUDA {self.runtime_version}")
        return "\n".join(lines)


def _version(pair) -> str | None:
    try:
        major, minor = pair
        return f"{major}.{minor}"
    except (TypeError, ValueError):
        return None


def _gpu_info() -> DeviceInfo:
    from numba import cuda

    dev = cuda.get_current_device()

    def attr(name: str):
        try:
            return getattr(dev, name)
        except Exception:  # an attribute this driver does not report
            return None

    free = total = None
    with contextlib.suppress(Exception):  # some drivers refuse memory queries
        free, total = cuda.current_context().get_memory_info()
    try:
        driver = _version(cuda.cudadrv.driver.driver.get_version())
    except Exception:
        driver = None
    try:
        rt = _version(cuda.runtime.get_version())
    except Exception:
        rt = None
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    clock, mem_clock = attr("CLOCK_RATE"), attr("MEMORY_CLOCK_RATE")  # both in kHz
    return DeviceInfo(
        mode="gpu",
        name=name,
        compute_capability=tuple(dev.compute_capability),
        sm_count=attr("MULTIPROCESSOR_COUNT"),
        memory_bytes=total,
        memory_free_bytes=free,
        sm_clock_hz=clock * 1e3 if clock else None,
        memory_clock_hz=mem_clock * 1e3 if mem_clock else None,
        memory_bus_bits=attr("GLOBAL_MEMORY_BUS_WIDTH"),
        l2_bytes=attr("L2_CACHE_SIZE"),
        max_threads_per_block=attr("MAX_THREADS_PER_BLOCK"),
        max_shared_memory_per_block=attr("MAX_SHARED_MEMORY_PER_BLOCK"),
        max_shared_memory_per_block_optin=attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        registers_per_sm=attr("MAX_REGISTERS_PER_MULTIPROCESSOR"),
        warp_size=attr("WARP_SIZE") or 32,
        driver_version=driver,
        runtime_version=rt,
        notes="a real GPU: timings are GPU timings",
    )


def _simulator_engine() -> str:
    """``"course"`` (the course's simulator, the default) or ``"numba"`` (numba-cuda's,
    ``GPU_COURSE_SIM=numba``); a misspelt value runs the default."""
    from .sim import engine_or_default

    return "numba" if engine_or_default() == "numba" else "course"


def _simulator_info() -> DeviceInfo:
    if _simulator_engine() == "numba":
        return DeviceInfo(
            mode="simulator",
            name="Numba CUDA simulator",
            max_threads_per_block=1024,
            notes=(
                f"kernels run as Python threads on this CPU ({os.cpu_count()} cores), one block "
                "at a time, about 10,000 threads per second. Indexing, shared memory, "
                "syncthreads and atomics behave as on a GPU; speed does not: timings are not "
                "GPU timings."
            ),
        )
    return DeviceInfo(
        mode="simulator",
        name="the course's CUDA simulator",
        max_threads_per_block=1024,
        notes=(
            f"kernels run on this CPU ({os.cpu_count()} cores), the threads of a block taking "
            "turns between barriers, or, for a large launch it can vouch for, every thread of "
            "many blocks at once as NumPy arrays: about 0.1 to 15 million threads per second. "
            "Indexing, shared memory, syncthreads, warp intrinsics and atomics behave as on a "
            "GPU, and a hang or an undefined access is reported with its thread and line; "
            "speed does not: timings are not GPU timings."
        ),
    )


def simulator_speed_note() -> str:
    """How fast the simulator in use runs (:data:`SIMULATOR_SPEED_NOTE`, or numba-cuda's)."""
    if _simulator_engine() == "numba":
        return NUMBA_SIMULATOR_SPEED_NOTE
    return SIMULATOR_SPEED_NOTE


@cache
def device_info() -> DeviceInfo:
    """The device the course runs kernels on (cached: the device does not change in a session)."""
    return _gpu_info() if runtime.mode == "gpu" else _simulator_info()


def banner() -> str:
    """One line for the top of every notebook: the mode and why."""
    if runtime.mode == "gpu":
        info = device_info()
        return f"Mode: GPU ({info.name}, compute capability {info.compute_capability_str})."
    # Two lines: one line of 185 characters breaks inside a word in JupyterLab's output area.
    return f"Mode: simulator ({runtime.mode_reason}).\n{simulator_speed_note()}"
