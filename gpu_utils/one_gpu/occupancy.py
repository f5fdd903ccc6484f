"""Theoretical occupancy: how many warps of a kernel fit on one SM at once (chapter 02).

Occupancy is the number of warps resident on a streaming multiprocessor (SM) divided by the most
it can hold. Four resources cap it, and the scarcest one wins:

* warp slots: at most ``max_warps_per_sm`` warps, so ``max_warps // warps_per_block`` blocks;
* registers: each warp gets ``registers_per_thread * 32`` registers rounded up to a multiple of
  256, taken from one of the SM's four sub-partitions (a quarter of the register file each);
* shared memory: each block gets its shared memory plus the 1 KB the driver reserves per block
  (compute capability 8.0 and later), rounded up to the allocation unit (256 B on 7.x, 128 B on
  8.x and 9.0), out of the SM's shared memory;
* blocks: at most ``max_blocks_per_sm`` blocks, however small.

The per-SM limits come from the CUDA C++ Programming Guide's table "Technical Specifications per
Compute Capability"; the allocation rules (granularities, sub-partitions, reserved memory, the
register check) follow ``cuda_occupancy.h``, the header form of NVIDIA's CUDA Occupancy Calculator
that ships with the CUDA Toolkit (13.0 here). The shared-memory carveout is the default one, which
lets shared memory use the SM's whole capacity. Tests reproduce NVIDIA's published examples and
compare against ``cuda_occupancy.h`` itself.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "SOURCES",
    "OccupancyResult",
    "SMLimits",
    "compute_capabilities",
    "limits",
    "occupancy",
    "occupancy_curve",
]

KB = 1024
WARP_SIZE = 32

#: Where each rule comes from.
SOURCES: Mapping[str, str] = MappingProxyType(
    {
        "per-SM limits": (
            "CUDA C++ Programming Guide, Compute Capabilities, table 'Technical Specifications "
            "per Compute Capability' (warps, threads and blocks per SM, registers, shared memory)"
        ),
        "allocation rules": (
            "cuda_occupancy.h, CUDA Toolkit 13.0 (the CUDA Occupancy Calculator as a header): "
            "cudaOccMaxBlocksPerSMRegsLimit, cudaOccMaxBlocksPerSMSmemLimit, "
            "cudaOccSMemAllocationGranularity, cudaOccSubPartitionsPerMultiprocessor"
        ),
        "reserved shared memory": (
            "CUDA C++ Programming Guide, Compute Capability 8.x and 9.0: 1 KB of shared memory "
            "per block is reserved for system use (cudaDeviceProp.reservedSharedMemPerBlock)"
        ),
        "examples": (
            "CUDA C++ Best Practices Guide, 'Calculating Occupancy'; CUDA C++ Programming Guide, "
            "'Multiprocessor Level' (see tests/test_occupancy.py)"
        ),
    }
)


@dataclass(frozen=True)
class SMLimits:
    """One compute capability's per-SM resources and allocation rules (bytes for memory)."""

    compute_capability: tuple[int, int]
    gpus: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    shared_mem_per_sm: int
    max_shared_mem_per_block: int  # with the opt-in for dynamic shared memory above 48 KB
    shared_mem_allocation_unit: int
    reserved_shared_mem_per_block: int
    max_threads_per_block: int = 1024
    registers_per_sm: int = 64 * KB
    max_registers_per_block: int = 64 * KB
    max_registers_per_thread: int = 255
    register_allocation_unit: int = 256  # registers, allocated per warp
    sub_partitions: int = 4  # each with its own warp scheduler and a quarter of the registers
    default_shared_mem_per_block: int = 48 * KB  # static shared memory; beyond it, opt in

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * WARP_SIZE

    @property
    def name(self) -> str:
        major, minor = self.compute_capability
        return f"{major}.{minor}"


def _volta_turing(cc, gpus, warps, blocks, smem) -> SMLimits:
    return SMLimits(cc, gpus, warps, blocks, smem, smem, 256, 0)


def _ampere_and_later(cc, gpus, warps, blocks, smem) -> SMLimits:
    return SMLimits(cc, gpus, warps, blocks, smem, smem - KB, 128, KB)


_LIMITS: Mapping[tuple[int, int], SMLimits] = MappingProxyType(
    {
        limit.compute_capability: limit
        for limit in (
            _volta_turing((7, 0), "V100", 64, 32, 96 * KB),
            _volta_turing((7, 2), "Jetson AGX Xavier", 64, 32, 96 * KB),
            _volta_turing((7, 5), "T4, RTX 20xx", 32, 16, 64 * KB),
            _ampere_and_later((8, 0), "A100", 64, 32, 164 * KB),
            _ampere_and_later((8, 6), "A10, A40, RTX 30xx", 48, 16, 100 * KB),
            _ampere_and_later((8, 7), "Jetson AGX Orin", 48, 16, 164 * KB),
            _ampere_and_later((8, 9), "L4, L40S, RTX 40xx", 48, 24, 100 * KB),
            _ampere_and_later((9, 0), "H100, H200", 64, 32, 228 * KB),
        )
    }
)

RESOURCES = ("warps", "registers", "shared memory", "blocks")


def compute_capabilities() -> list[tuple[int, int]]:
    """The compute capabilities this calculator knows (7.0 to 9.0)."""
    return list(_LIMITS)


def _known() -> str:
    return ", ".join(f"{v.name} ({v.gpus})" for v in _LIMITS.values())


def _parse_cc(compute_capability: object) -> tuple[int, int]:
    value = compute_capability
    if isinstance(value, str):
        parts = value.strip().split(".")
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            value = (int(parts[0]), int(parts[1]))
    if (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value)
    ):
        cc = (int(value[0]), int(value[1]))
        if cc in _LIMITS:
            return cc
        raise ValueError(
            f"compute capability {cc[0]}.{cc[1]} is not in this calculator's tables, which cover "
            f"{_known()}. Pick one of those; for a newer GPU use the CUDA occupancy API "
            "(cudaOccupancyMaxActiveBlocksPerMultiprocessor) or Nsight Compute's occupancy "
            "calculator."
        )
    raise ValueError(
        f"compute_capability={compute_capability!r}: give it as a pair such as (9, 0) or a "
        "string such as '9.0'; on a GPU, gu.device_info().compute_capability is yours."
    )


def limits(compute_capability: object = (9, 0)) -> SMLimits:
    """Per-SM limits and allocation rules for a compute capability, e.g. ``(8, 0)`` or ``"8.0"``."""
    return _LIMITS[_parse_cc(compute_capability)]


def _whole(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}={value!r}: give a whole number (an int), such as 256.")
    return int(value)


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


@dataclass(frozen=True)
class OccupancyResult:
    """Theoretical occupancy of one launch configuration on one SM.

    ``block_limits`` maps each resource to the blocks per SM it alone would allow (None: no
    limit). ``limiters`` lists every resource that reaches the minimum, in NVIDIA's order (warps,
    registers, shared memory, blocks); ``limiter`` is the first of them.
    """

    threads_per_block: int
    registers_per_thread: int
    shared_mem_per_block: int
    sm: SMLimits = field(repr=False)
    warps_per_block: int
    blocks_per_sm: int
    active_warps: int
    occupancy: float
    limiter: str
    limiters: tuple[str, ...]
    block_limits: Mapping[str, int | None]
    registers_per_warp: int
    shared_mem_allocated_per_block: int

    @property
    def compute_capability(self) -> tuple[int, int]:
        return self.sm.compute_capability

    @property
    def max_warps(self) -> int:
        return self.sm.max_warps_per_sm

    @property
    def active_threads(self) -> int:
        return self.active_warps * WARP_SIZE

    def __str__(self) -> str:
        return (
            f"{self.threads_per_block} threads/block, {self.registers_per_thread} registers/thread, "
            f"{self.shared_mem_per_block:,} B shared/block on cc {self.sm.name}: "
            f"{self.blocks_per_sm} blocks/SM, {self.active_warps}/{self.max_warps} warps, "
            f"occupancy {self.occupancy:.1%} (limited by {self.limiter})"
        )

    __repr__ = __str__

    def explain(self) -> str:
        """The calculation step by step, as the chapter does it by hand."""
        sm, limit = self.sm, self.block_limits
        fmt = _fmt_limit
        per_sub = sm.registers_per_sm // sm.sub_partitions
        reg_line = (
            f"  registers: {self.registers_per_thread} x 32 = "
            f"{self.registers_per_thread * WARP_SIZE} per warp, rounded up to a multiple of "
            f"{sm.register_allocation_unit}: {self.registers_per_warp}"
        )
        if self.registers_per_warp:
            warps_per_sub = per_sub // self.registers_per_warp
            reg_line += (
                f"; each of the {sm.sub_partitions} sub-partitions holds {per_sub:,} registers, "
                f"so {warps_per_sub} warps there, {warps_per_sub * sm.sub_partitions} per SM"
            )
        reg_line += f" -> {fmt(limit['registers'])}"
        if limit["registers"] == 0:
            reg_line += (
                f" (a block needs more than the {sm.max_registers_per_block:,} registers a "
                "block may use: this launch fails with 'too many resources requested')"
            )
        reserved = (
            f" + {sm.reserved_shared_mem_per_block:,} reserved"
            if sm.reserved_shared_mem_per_block
            else ""
        )
        smem_line = (
            f"  shared memory: {self.shared_mem_per_block:,}{reserved} B, rounded up to a "
            f"multiple of {sm.shared_mem_allocation_unit}: "
            f"{self.shared_mem_allocated_per_block:,} B per block of the SM's "
            f"{sm.shared_mem_per_sm:,} B -> {fmt(limit['shared memory'])}"
        )
        lines = [
            f"Compute capability {sm.name} ({sm.gpus}): {self.threads_per_block} threads/block, "
            f"{self.registers_per_thread} registers/thread, {self.shared_mem_per_block:,} B "
            "shared memory/block",
            f"  warps per block: ceil({self.threads_per_block} / 32) = {self.warps_per_block}",
            f"  warp slots: {sm.max_warps_per_sm} // {self.warps_per_block} -> "
            f"{fmt(limit['warps'])}",
            reg_line,
            smem_line,
            f"  blocks per SM: at most {sm.max_blocks_per_sm} -> {fmt(limit['blocks'])}",
            f"  => {self.blocks_per_sm} blocks x {self.warps_per_block} warps = "
            f"{self.active_warps} of {sm.max_warps_per_sm} warps: occupancy "
            f"{self.occupancy:.1%}, limited by {' and '.join(self.limiters)}",
        ]
        return "\n".join(lines)


def _fmt_limit(blocks: int | None) -> str:
    return "no limit" if blocks is None else f"{blocks} blocks"


def _register_limit(sm: SMLimits, warps_per_block: int, registers_per_warp: int) -> int | None:
    """Blocks per SM allowed by registers (cudaOccMaxBlocksPerSMRegsLimit, no partitioned GC)."""
    per_block = registers_per_warp * warps_per_block
    # The hardware checks a block as if its warps were spread over all sub-partitions evenly.
    assumed_per_block = registers_per_warp * _round_up(warps_per_block, sm.sub_partitions)
    if max(per_block, assumed_per_block) > sm.max_registers_per_block:
        return 0
    if registers_per_warp == 0:
        return None
    warps_per_sub_partition = (sm.registers_per_sm // sm.sub_partitions) // registers_per_warp
    return warps_per_sub_partition * sm.sub_partitions // warps_per_block


def occupancy(
    threads_per_block: int,
    registers_per_thread: int,
    shared_mem_per_block: int = 0,
    compute_capability: object = (9, 0),
) -> OccupancyResult:
    """Theoretical occupancy of a kernel launch on one SM.

    ``registers_per_thread`` is what ptxas allocated (``kernel.compile(signature).regs_per_thread``
    on a GPU, or ``gu.ptx.compile_kernel(kernel, signature).registers`` without one);
    ``shared_mem_per_block`` is static plus dynamic shared memory in bytes. Raises ValueError,
    saying what to change, for a launch the GPU cannot accept.
    """
    sm = limits(compute_capability)
    threads = _whole("threads_per_block", threads_per_block)
    registers = _whole("registers_per_thread", registers_per_thread)
    smem = _whole("shared_mem_per_block", shared_mem_per_block)
    if not 1 <= threads <= sm.max_threads_per_block:
        raise ValueError(
            f"threads_per_block={threads}: a block holds 1 to {sm.max_threads_per_block} threads "
            f"on compute capability {sm.name}. Use a multiple of 32 up to "
            f"{sm.max_threads_per_block} (128 or 256 are good defaults) and launch more blocks."
        )
    if not 0 <= registers <= sm.max_registers_per_thread:
        raise ValueError(
            f"registers_per_thread={registers}: a thread has 0 to {sm.max_registers_per_thread} "
            "registers (ptxas spills anything beyond to local memory). Use the count ptxas "
            "reports: gu.ptx.compile_kernel(kernel, signature).registers, or "
            "kernel.compile(signature).regs_per_thread on a GPU."
        )
    if not 0 <= smem <= sm.max_shared_mem_per_block:
        raise ValueError(
            f"shared_mem_per_block={smem:,} B: a block may use 0 to "
            f"{sm.max_shared_mem_per_block:,} B ({sm.max_shared_mem_per_block // KB} KB) of "
            f"shared memory on compute capability {sm.name} (above "
            f"{sm.default_shared_mem_per_block // KB} KB only as dynamic shared memory, after "
            "opting in). Use less per block, or split the work over more blocks."
        )

    warps_per_block = -(-threads // WARP_SIZE)
    registers_per_warp = _round_up(registers * WARP_SIZE, sm.register_allocation_unit)
    smem_allocated = _round_up(
        smem + sm.reserved_shared_mem_per_block, sm.shared_mem_allocation_unit
    )
    block_limits: dict[str, int | None] = {
        "warps": sm.max_warps_per_sm // warps_per_block,
        "registers": _register_limit(sm, warps_per_block, registers_per_warp),
        "shared memory": sm.shared_mem_per_sm // smem_allocated if smem_allocated else None,
        "blocks": sm.max_blocks_per_sm,
    }
    blocks = min(v for v in block_limits.values() if v is not None)
    limiters = tuple(name for name in RESOURCES if block_limits[name] == blocks)
    active_warps = blocks * warps_per_block
    return OccupancyResult(
        threads_per_block=threads,
        registers_per_thread=registers,
        shared_mem_per_block=smem,
        sm=sm,
        warps_per_block=warps_per_block,
        blocks_per_sm=blocks,
        active_warps=active_warps,
        occupancy=active_warps / sm.max_warps_per_sm,
        limiter=limiters[0],
        limiters=limiters,
        block_limits=MappingProxyType(block_limits),
        registers_per_warp=registers_per_warp,
        shared_mem_allocated_per_block=smem_allocated,
    )


def occupancy_curve(
    registers_per_thread: int,
    shared_mem_per_block: int = 0,
    compute_capability: object = (9, 0),
    block_sizes: Iterable[int] | None = None,
) -> list[OccupancyResult]:
    """Occupancy for each block size (default: every multiple of 32 up to the maximum)."""
    sm = limits(compute_capability)
    sizes = block_sizes or range(WARP_SIZE, sm.max_threads_per_block + 1, WARP_SIZE)
    return [
        occupancy(size, registers_per_thread, shared_mem_per_block, sm.compute_capability)
        for size in sizes
    ]
