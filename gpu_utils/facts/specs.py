"""Published hardware figures, each with its source (chapters 01, 02 and 04).

Every number here comes from a vendor datasheet, whitepaper or tuning guide, named in ``sources``.
Conventions, so that figures are never mixed up:

* rates are decimal, as datasheets print them (1 GB/s = 1e9 bytes/s); memory capacities are
  binary, because memory is built in powers of two: a datasheet's "80 GB" of HBM is 80 GiB
  (80 x 2**30 bytes), which is what the driver reports, less a little it reserves;
* ``*_dense_flops`` are dense tensor-core rates. Where a datasheet prints only the rate "with
  sparsity" (2:4 structured sparsity doubles the peak), the dense rate is that figure / 2, and the
  source says so;
* ``nvlink_bandwidth`` is per GPU and per direction: datasheets print the bidirectional total,
  which is twice this;
* ``network_bandwidth`` is the scale-out network per GPU and per direction in NVIDIA's reference
  system for that GPU (a DGX: one NIC per GPU), converted from Gb/s to bytes/s;
* ``None`` means the chip has no such unit (a T4 has no bf16 or fp8 tensor cores, no NVLink).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["A100_DEVICE_QUERY", "SPECS", "GpuSpec", "get", "match", "names"]

GB = 1e9  # rates: 1 GB/s = 1e9 bytes/s
GIB = 2**30  # capacities: a memory datasheet's "GB" is 2**30 bytes
KB = 1024  # on-chip sizes (shared memory, L2) are binary in NVIDIA's tuning guides
MB = 1024 * 1024
TERA = 1e12


@dataclass(frozen=True)
class GpuSpec:
    """One GPU's published figures; ``sources`` maps each field name to its citation."""

    name: str
    architecture: str
    compute_capability: tuple[int, int]
    sm_count: int
    hbm_bytes: float
    hbm_bandwidth: float
    l2_bytes: int
    smem_per_sm_bytes: int
    fp32_flops: float
    tf32_dense_flops: float | None
    fp16_dense_flops: float
    bf16_dense_flops: float | None
    fp8_dense_flops: float | None
    nvlink_bandwidth: float | None
    network_bandwidth: float | None
    tdp_watts: float
    sources: Mapping[str, str] = field(repr=False)

    def peak_flops(self, dtype: str = "fp32") -> float | None:
        """Peak FLOP/s for ``dtype`` in fp32 (CUDA cores), tf32, fp16, bf16, fp8 (tensor cores)."""
        key = {"fp32": "fp32_flops"}.get(dtype, f"{dtype}_dense_flops")
        if not hasattr(self, key):
            raise ValueError(f"unknown dtype {dtype!r}: use fp32, tf32, fp16, bf16 or fp8")
        return getattr(self, key)


def _sources(**cites: str) -> Mapping[str, str]:
    return MappingProxyType(dict(cites))


_T4_DS = "NVIDIA T4 Tensor Core GPU datasheet (2019)"
_T4_WP = "NVIDIA Turing GPU Architecture whitepaper (2018), Appendix A, Tesla T4 (TU104)"
_L4_DS = "NVIDIA L4 Tensor Core GPU datasheet (2023)"
_L4_SPARSE = _L4_DS + ": printed with sparsity; dense = printed / 2"
_A100_DS = "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB SXM column"
_A100_WP = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1"
_H100_DS = "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column"
_H100_SPARSE = _H100_DS + ": printed with sparsity; dense = printed / 2"
_H100_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 3, H100 SXM5"
_H200_DS = "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM column"
_H200_SPARSE = _H200_DS + ": printed with sparsity; dense = printed / 2"
_B200_DS = "NVIDIA GB200 NVL72 / HGX B200 datasheet (2024), HGX B200 per-GPU column"
_B200_SPARSE = _B200_DS + ": printed with sparsity; dense = printed / 2"
_B200_QUERY = "CUDA device query on a B200 (cudaGetDeviceProperties), quoted in pytorch/ao PR #4002"
_NVLINK = "; the datasheet's figure is bidirectional, so per direction = printed / 2"
_DGX_H_NIC = (
    "NVIDIA DGX H100 datasheet (2023): 8x single-port ConnectX-7 400 Gb/s InfiniBand/Ethernet "
    "for 8 GPUs; 400 Gb/s = 50 GB/s"
)


def _cc(version: str) -> str:
    return f"CUDA C++ Programming Guide, Compute Capabilities table ({version})"


SPECS: Mapping[str, GpuSpec] = MappingProxyType(
    {
        "T4": GpuSpec(
            name="T4",
            architecture="Turing",
            compute_capability=(7, 5),
            sm_count=40,
            hbm_bytes=16 * GIB,
            hbm_bandwidth=320 * GB,
            l2_bytes=4 * MB,
            smem_per_sm_bytes=64 * KB,
            fp32_flops=8.1 * TERA,
            tf32_dense_flops=None,
            fp16_dense_flops=65 * TERA,
            bf16_dense_flops=None,
            fp8_dense_flops=None,
            nvlink_bandwidth=None,
            network_bandwidth=None,
            tdp_watts=70,
            sources=_sources(
                compute_capability=_cc("7.5"),
                sm_count=_T4_WP,
                hbm_bytes=_T4_DS + " (GDDR6, not HBM)",
                hbm_bandwidth=_T4_DS + " (320+ GB/s)",
                l2_bytes=_T4_WP,
                smem_per_sm_bytes="NVIDIA Turing Tuning Guide, 1.4.2.1 (64 KB per SM)",
                fp32_flops=_T4_DS,
                fp16_dense_flops=_T4_DS + " (mixed precision FP16/FP32, no sparsity on Turing)",
                tdp_watts=_T4_DS,
            ),
        ),
        "L4": GpuSpec(
            name="L4",
            architecture="Ada Lovelace",
            compute_capability=(8, 9),
            sm_count=58,
            hbm_bytes=24 * GIB,
            hbm_bandwidth=300 * GB,
            l2_bytes=48 * MB,
            smem_per_sm_bytes=100 * KB,
            fp32_flops=30.3 * TERA,
            tf32_dense_flops=60 * TERA,
            fp16_dense_flops=121 * TERA,
            bf16_dense_flops=121 * TERA,
            fp8_dense_flops=242.5 * TERA,
            nvlink_bandwidth=None,
            network_bandwidth=None,
            tdp_watts=72,
            sources=_sources(
                compute_capability=_cc("8.9"),
                sm_count="NVIDIA L4 product brief (2023): 7,424 CUDA cores = 58 SMs x 128",
                hbm_bytes=_L4_DS + " (GDDR6, not HBM)",
                hbm_bandwidth=_L4_DS,
                l2_bytes="NVIDIA Ada GPU Architecture whitepaper (2023), AD104: 48 MB L2",
                smem_per_sm_bytes="NVIDIA Ada Tuning Guide, 1.4.2.2 (100 KB per SM)",
                fp32_flops=_L4_DS,
                tf32_dense_flops=_L4_SPARSE + " (120 TFLOPS)",
                fp16_dense_flops=_L4_SPARSE + " (242 TFLOPS)",
                bf16_dense_flops=_L4_SPARSE + " (242 TFLOPS)",
                fp8_dense_flops=_L4_SPARSE + " (485 TFLOPS)",
                tdp_watts=_L4_DS,
            ),
        ),
        "A100-SXM4-80GB": GpuSpec(
            name="A100-SXM4-80GB",
            architecture="Ampere",
            compute_capability=(8, 0),
            sm_count=108,
            hbm_bytes=80 * GIB,
            hbm_bandwidth=2039 * GB,
            l2_bytes=40 * MB,
            smem_per_sm_bytes=164 * KB,
            fp32_flops=19.5 * TERA,
            tf32_dense_flops=156 * TERA,
            fp16_dense_flops=312 * TERA,
            bf16_dense_flops=312 * TERA,
            fp8_dense_flops=None,
            nvlink_bandwidth=300 * GB,
            network_bandwidth=25 * GB,
            tdp_watts=400,
            sources=_sources(
                compute_capability=_cc("8.0"),
                sm_count=_A100_WP,
                hbm_bytes=_A100_DS,
                hbm_bandwidth=_A100_DS,
                l2_bytes=_A100_WP,
                smem_per_sm_bytes="NVIDIA Ampere Tuning Guide, 1.4.2.4 (164 KB per SM)",
                fp32_flops=_A100_DS,
                tf32_dense_flops=_A100_DS + " (dense; 312 with sparsity)",
                fp16_dense_flops=_A100_DS + " (dense; 624 with sparsity)",
                bf16_dense_flops=_A100_DS + " (dense; 624 with sparsity)",
                nvlink_bandwidth=_A100_DS + " (600 GB/s)" + _NVLINK,
                network_bandwidth="NVIDIA DGX A100 datasheet (2020): 8x single-port ConnectX-6 200 Gb/s HDR InfiniBand for 8 GPUs; 200 Gb/s = 25 GB/s",
                tdp_watts=_A100_DS,
            ),
        ),
        "H100-SXM": GpuSpec(
            name="H100-SXM",
            architecture="Hopper",
            compute_capability=(9, 0),
            sm_count=132,
            hbm_bytes=80 * GIB,
            hbm_bandwidth=3350 * GB,
            l2_bytes=50 * MB,
            smem_per_sm_bytes=228 * KB,
            fp32_flops=67 * TERA,
            tf32_dense_flops=494.5 * TERA,
            fp16_dense_flops=989.5 * TERA,
            bf16_dense_flops=989.5 * TERA,
            fp8_dense_flops=1979 * TERA,
            nvlink_bandwidth=450 * GB,
            network_bandwidth=50 * GB,
            tdp_watts=700,
            sources=_sources(
                compute_capability=_cc("9.0"),
                sm_count=_H100_WP,
                hbm_bytes=_H100_DS,
                hbm_bandwidth=_H100_DS + " (3.35 TB/s)",
                l2_bytes=_H100_WP,
                smem_per_sm_bytes="NVIDIA Hopper Tuning Guide, 1.4.1.1 (228 KB per SM)",
                fp32_flops=_H100_DS,
                tf32_dense_flops=_H100_SPARSE + " (989 TFLOPS)",
                fp16_dense_flops=_H100_SPARSE + " (1,979 TFLOPS)",
                bf16_dense_flops=_H100_SPARSE + " (1,979 TFLOPS)",
                fp8_dense_flops=_H100_SPARSE + " (3,958 TFLOPS)",
                nvlink_bandwidth=_H100_DS + " (900 GB/s)" + _NVLINK,
                network_bandwidth=_DGX_H_NIC,
                tdp_watts=_H100_DS + " (up to 700 W, configurable)",
            ),
        ),
        "H200": GpuSpec(
            name="H200",
            architecture="Hopper",
            compute_capability=(9, 0),
            sm_count=132,
            hbm_bytes=141 * GIB,
            hbm_bandwidth=4800 * GB,
            l2_bytes=50 * MB,
            smem_per_sm_bytes=228 * KB,
            fp32_flops=67 * TERA,
            tf32_dense_flops=494.5 * TERA,
            fp16_dense_flops=989.5 * TERA,
            bf16_dense_flops=989.5 * TERA,
            fp8_dense_flops=1979 * TERA,
            nvlink_bandwidth=450 * GB,
            network_bandwidth=50 * GB,
            tdp_watts=700,
            sources=_sources(
                compute_capability=_cc("9.0"),
                sm_count=_H100_WP + "; the H200 uses the same GH100 configuration",
                hbm_bytes=_H200_DS,
                hbm_bandwidth=_H200_DS + " (4.8 TB/s)",
                l2_bytes=_H100_WP + "; the H200 uses the same GH100 configuration",
                smem_per_sm_bytes="NVIDIA Hopper Tuning Guide, 1.4.1.1 (228 KB per SM)",
                fp32_flops=_H200_DS,
                tf32_dense_flops=_H200_SPARSE + " (989 TFLOPS)",
                fp16_dense_flops=_H200_SPARSE + " (1,979 TFLOPS)",
                bf16_dense_flops=_H200_SPARSE + " (1,979 TFLOPS)",
                fp8_dense_flops=_H200_SPARSE + " (3,958 TFLOPS)",
                nvlink_bandwidth=_H200_DS + " (900 GB/s)" + _NVLINK,
                network_bandwidth="NVIDIA DGX H200 datasheet (2024): 8x single-port ConnectX-7 400 Gb/s for 8 GPUs; 400 Gb/s = 50 GB/s",
                tdp_watts=_H200_DS + " (up to 700 W, configurable)",
            ),
        ),
        "B200": GpuSpec(
            name="B200",
            architecture="Blackwell",
            compute_capability=(10, 0),
            sm_count=148,
            hbm_bytes=180 * GIB,
            hbm_bandwidth=7700 * GB,
            l2_bytes=int(126.5 * MB),
            smem_per_sm_bytes=228 * KB,
            fp32_flops=75 * TERA,
            tf32_dense_flops=1100 * TERA,
            fp16_dense_flops=2250 * TERA,
            bf16_dense_flops=2250 * TERA,
            fp8_dense_flops=4500 * TERA,
            nvlink_bandwidth=900 * GB,
            network_bandwidth=50 * GB,
            tdp_watts=1000,
            sources=_sources(
                compute_capability=_cc("10.0"),
                sm_count=_B200_QUERY + " (no datasheet lists it)",
                hbm_bytes=_B200_DS,
                hbm_bandwidth=_B200_DS + " (7.7 TB/s)",
                l2_bytes=_B200_QUERY,
                smem_per_sm_bytes="NVIDIA Blackwell Tuning Guide, Unified Shared Memory/L1 (228 KB)",
                fp32_flops=_B200_DS,
                tf32_dense_flops=_B200_SPARSE + " (2.2 PFLOPS)",
                fp16_dense_flops=_B200_SPARSE + " (4.5 PFLOPS)",
                bf16_dense_flops=_B200_SPARSE + " (4.5 PFLOPS)",
                fp8_dense_flops=_B200_SPARSE + " (9 PFLOPS)",
                nvlink_bandwidth=_B200_DS + " (1.8 TB/s)" + _NVLINK,
                network_bandwidth="NVIDIA DGX B200 datasheet (2024): 8x single-port ConnectX-7 400 Gb/s for 8 GPUs; 400 Gb/s = 50 GB/s",
                tdp_watts=_B200_DS + " (configurable up to 1,000 W)",
            ),
        ),
    }
)

# Patterns for the names CUDA reports (cudaGetDeviceProperties.name), e.g. "NVIDIA H100 80GB HBM3".
_DEVICE_NAME_PATTERNS = (
    (r"\bH200\b", "H200"),
    (r"\bH100 80GB HBM3\b|\bH100 SXM", "H100-SXM"),
    (r"\bA100-SXM4-80GB\b", "A100-SXM4-80GB"),
    (r"\bB200\b", "B200"),
    (r"\bL4\b", "L4"),
    (r"\bT4\b", "T4"),
)


def names() -> list[str]:
    """The GPUs this module knows, in the order the course compares them."""
    return list(SPECS)


def get(name: str) -> GpuSpec:
    """Return the figures for ``name`` (one of :func:`names`)."""
    try:
        return SPECS[name]
    except KeyError:
        raise KeyError(f"no specs for {name!r}; known GPUs: {', '.join(SPECS)}") from None


def match(device_name: str) -> GpuSpec | None:
    """The spec for a device name as CUDA reports it (``"NVIDIA H100 80GB HBM3"``), or None."""
    for pattern, key in _DEVICE_NAME_PATTERNS:
        if re.search(pattern, device_name):
            return SPECS[key]
    return None


#: The fields of a device query (cudaGetDeviceProperties) as an A100-SXM4-80GB reports them.
#: SM count, cc, L2 and bus width: NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020);
#: the memory clock is the one that gives the datasheet's 2,039 GB/s on that 5,120-bit bus;
#: per-SM limits: CUDA C++ Programming Guide, compute capability 8.0.
A100_DEVICE_QUERY: Mapping[str, object] = MappingProxyType(
    {
        "name": "NVIDIA A100-SXM4-80GB",
        "compute_capability": (8, 0),
        "multiprocessor_count": 108,
        "memory_clock_rate_khz": 1_593_000,
        "global_memory_bus_width_bits": 5120,
        "l2_cache_size_bytes": 40 * KB * KB,
        "max_threads_per_block": 1024,
        "max_threads_per_multiprocessor": 2048,
        "max_registers_per_multiprocessor": 65536,
        "max_shared_memory_per_multiprocessor": 164 * KB,
        "warp_size": 32,
    }
)
