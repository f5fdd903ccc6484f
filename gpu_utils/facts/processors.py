"""Published figures of a server CPU and of Google's TPUs, each with its source (chapter 07).

GPU figures live in :mod:`gpu_utils.facts.specs`; this module holds the other processors chapter 07
compares them with, in the same style: every figure has a citation in ``sources``, and the units
follow :mod:`gpu_utils.facts.specs`: memory *capacities* are binary (a spec sheet's "32 GB" of HBM is
32 GiB, as Google's own TPU7x table prints them), *rates* are decimal (1 GB/s = 1e9 bytes/s).
``None`` means "no such unit, or not published". A CPU's peaks are not printed on any datasheet, so they are computed from published
per-core figures with the formulas below (the sources name both the figures and the formulas):

* FP32 peak = cores x clock x FMA units per core x lanes per 512-bit register x 2 FLOP per FMA;
* AMX peak = cores x clock x matrix operations per cycle per core (Intel counts a multiply-add
  as 2 operations);
* memory bandwidth = channels x transfers per second x 8 bytes per transfer (a 64-bit channel).

The CPU's clock is its *base* clock: all-core AVX-512 and AMX clocks are not published, so its
peaks are estimates of the order of magnitude, not a guarantee.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["CPUS", "TPUS", "CpuSpec", "TpuSpec", "get", "names"]

GB = 1e9
GIB = 2**30
TERA = 1e12

DTYPES = ("fp32", "bf16", "int8", "fp8")


@dataclass(frozen=True)
class CpuSpec:
    """One server CPU socket: published per-core figures; peaks follow from the formulas."""

    name: str
    architecture: str
    cores: int
    base_clock_hz: float
    fma_units_per_core: int
    fp32_lanes: int
    amx_bf16_ops_per_cycle: int | None
    amx_int8_ops_per_cycle: int | None
    memory_channels: int
    memory_transfers_per_s: float
    sources: Mapping[str, str] = field(repr=False)

    kind = "cpu"
    fp8_flops = None  # no fp8 unit

    @property
    def fp32_flops(self) -> float:
        """Vector (AVX-512) FP32 peak: cores x clock x FMA units x lanes x 2."""
        return self.cores * self.base_clock_hz * self.fma_units_per_core * self.fp32_lanes * 2

    @property
    def bf16_flops(self) -> float | None:
        """Matrix-unit (AMX) bf16 peak: cores x clock x operations per cycle."""
        if self.amx_bf16_ops_per_cycle is None:
            return None
        return self.cores * self.base_clock_hz * self.amx_bf16_ops_per_cycle

    @property
    def int8_ops(self) -> float | None:
        """Matrix-unit (AMX) int8 peak, operations per second."""
        if self.amx_int8_ops_per_cycle is None:
            return None
        return self.cores * self.base_clock_hz * self.amx_int8_ops_per_cycle

    @property
    def memory_bandwidth(self) -> float:
        """DRAM bandwidth in bytes/s: channels x transfers/s x 8 bytes."""
        return self.memory_channels * self.memory_transfers_per_s * 8

    def peak_flops(self, dtype: str = "fp32") -> float | None:
        """Peak operations per second for ``dtype`` (fp32, bf16, int8, fp8), or None."""
        return _peak(self, dtype)


@dataclass(frozen=True)
class TpuSpec:
    """One TPU chip's published figures. ``mxu_shape`` is one matrix unit's systolic array."""

    name: str
    year: int
    tensorcores: int
    mxu_count: int | None
    mxu_shape: tuple[int, int] | None
    bf16_flops: float | None
    int8_ops: float | None
    fp8_flops: float | None
    hbm_bytes: float
    hbm_bandwidth: float
    sources: Mapping[str, str] = field(repr=False)
    clock_hz: float | None = None

    kind = "tpu"
    fp32_flops = None  # the matrix units multiply bf16 (or narrower); no fp32 peak is published

    @property
    def memory_bandwidth(self) -> float:
        """Off-chip memory bandwidth in bytes/s (HBM; DDR3 on TPU v1)."""
        return self.hbm_bandwidth

    def peak_flops(self, dtype: str = "bf16") -> float | None:
        """Peak operations per second for ``dtype`` (fp32, bf16, int8, fp8), or None."""
        return _peak(self, dtype)


def _peak(spec: CpuSpec | TpuSpec, dtype: str) -> float | None:
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    return getattr(spec, "int8_ops" if dtype == "int8" else f"{dtype}_flops")


def _sources(**cites: str) -> Mapping[str, str]:
    return MappingProxyType(dict(cites))


_ARK_8480 = (
    "Intel ARK, Intel Xeon Platinum 8480+ Processor (105M Cache, 2.00 GHz) specifications: "
    "56 cores, 2.00 GHz base, 8 memory channels, DDR5-4800"
)
_DGX_H100_CPU = (
    "NVIDIA DGX H100 datasheet (2023): dual Intel Xeon Platinum 8480C, 112 cores total, "
    "2.00 GHz base, 3.80 GHz max boost (the host CPU of an 8-GPU H100 system)"
)
_INTEL_OPT = (
    "Intel 64 and IA-32 Architectures Optimization Reference Manual, Sapphire Rapids / Golden "
    "Cove server core: two 512-bit FMA units per core (ports 0 and 5), 16 FP32 lanes each"
)
_INTEL_AMX = (
    "Intel, 'Accelerate AI Workloads with Intel Advanced Matrix Extensions (Intel AMX)' "
    "solution brief (2023): per core, 2,048 INT8 or 1,024 BF16 operations per cycle"
)

CPUS: Mapping[str, CpuSpec] = MappingProxyType(
    {
        "Xeon-8480+": CpuSpec(
            name="Xeon-8480+",
            architecture="Sapphire Rapids (4th Gen Xeon Scalable)",
            cores=56,
            base_clock_hz=2.0e9,
            fma_units_per_core=2,
            fp32_lanes=16,
            amx_bf16_ops_per_cycle=1024,
            amx_int8_ops_per_cycle=2048,
            memory_channels=8,
            memory_transfers_per_s=4800e6,
            sources=_sources(
                cores=_ARK_8480 + "; also " + _DGX_H100_CPU,
                base_clock_hz=_ARK_8480 + " (base clock; all-core AVX-512/AMX clocks unpublished)",
                fma_units_per_core=_INTEL_OPT,
                fp32_lanes=_INTEL_OPT + " (512 bits / 32 bits = 16)",
                amx_bf16_ops_per_cycle=_INTEL_AMX,
                amx_int8_ops_per_cycle=_INTEL_AMX,
                memory_channels=_ARK_8480,
                memory_transfers_per_s=_ARK_8480 + " (4800 MT/s)",
            ),
        ),
    }
)

_TPU_V1 = (
    "N. P. Jouppi et al., 'In-Datacenter Performance Analysis of a Tensor Processing Unit', "
    "ISCA 2017"
)
_CLOUD_ARCH = (
    "Google Cloud TPU documentation, 'TPU architecture': an MXU is 128 x 128 multiply-"
    "accumulators in a systolic array, bf16 multiplies with FP32 accumulation"
)
_CLOUD_V4 = "Google Cloud TPU documentation, 'TPU v4' (system architecture table)"
_V4_PAPER = (
    "N. P. Jouppi et al., 'TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning "
    "with Hardware Support for Embeddings', ISCA 2023"
)
_CLOUD_V5E = "Google Cloud TPU documentation, 'TPU v5e' (key chip specifications)"
_CLOUD_V5P = "Google Cloud TPU documentation, 'TPU v5p' (key specifications)"
_CLOUD_V6E = "Google Cloud TPU documentation, 'TPU v6e' (Trillium; specifications table)"
_CLOUD_7X = (
    "Google Cloud TPU documentation, 'TPU7x (Ironwood)' (specifications table comparing v5p, "
    "v6e and TPU7x)"
)

TPUS: Mapping[str, TpuSpec] = MappingProxyType(
    {
        "TPU-v1": TpuSpec(
            name="TPU-v1",
            year=2015,
            tensorcores=1,
            mxu_count=1,
            mxu_shape=(256, 256),
            bf16_flops=None,
            int8_ops=92 * TERA,
            fp8_flops=None,
            hbm_bytes=8 * GIB,
            hbm_bandwidth=34 * GB,
            clock_hz=700e6,
            sources=_sources(
                year=_TPU_V1 + ": deployed in Google's datacenters since 2015",
                tensorcores=_TPU_V1 + ", Section 2 (one matrix unit)",
                mxu_count=_TPU_V1 + ", Section 2",
                mxu_shape=_TPU_V1 + ", Section 2: 256 x 256 8-bit MACs (65,536)",
                int8_ops=_TPU_V1 + ", Table 2: 92 TeraOps/s (8-bit) peak",
                hbm_bytes=_TPU_V1 + ", Section 2: 8 GiB of off-chip DDR3 weight memory (not HBM)",
                hbm_bandwidth=_TPU_V1 + ", Section 2 and Table 2: 34 GB/s DDR3",
                clock_hz=_TPU_V1 + ", Table 2: 700 MHz",
            ),
        ),
        "TPU-v4": TpuSpec(
            name="TPU-v4",
            year=2020,
            tensorcores=2,
            mxu_count=8,
            mxu_shape=(128, 128),
            bf16_flops=275 * TERA,
            int8_ops=275 * TERA,
            fp8_flops=None,
            hbm_bytes=32 * GIB,
            hbm_bandwidth=1200 * GB,
            sources=_sources(
                year=_V4_PAPER + ": in deployment since 2020",
                tensorcores=_CLOUD_V4 + ": two TensorCores per chip",
                mxu_count=_CLOUD_V4 + ": four MXUs per TensorCore",
                mxu_shape=_CLOUD_ARCH,
                bf16_flops=_CLOUD_V4 + ": 275 teraflops (bf16 or int8)",
                int8_ops=_CLOUD_V4 + ": 275 teraflops (bf16 or int8)",
                hbm_bytes=_CLOUD_V4 + ": HBM2 32 GiB",
                hbm_bandwidth=_CLOUD_V4 + ": 1200 GBps",
            ),
        ),
        "TPU-v5e": TpuSpec(
            name="TPU-v5e",
            year=2023,
            tensorcores=1,
            mxu_count=4,
            mxu_shape=(128, 128),
            bf16_flops=197 * TERA,
            int8_ops=393 * TERA,
            fp8_flops=None,
            hbm_bytes=16 * GIB,
            hbm_bandwidth=819 * GB,
            sources=_sources(
                year=_CLOUD_V5E + " (announced August 2023)",
                tensorcores=_CLOUD_V5E + ": one TensorCore per chip",
                mxu_count=_CLOUD_V5E + ": four MXUs per TensorCore",
                mxu_shape=_CLOUD_ARCH,
                bf16_flops=_CLOUD_V5E + ": 197 TFLOPs (bf16)",
                int8_ops=_CLOUD_V5E + ": 393 TOPs (int8)",
                hbm_bytes=_CLOUD_V5E + ": HBM2 16 GB (binary, as every capacity here)",
                hbm_bandwidth=_CLOUD_V5E
                + ": 819 GBps (a later revision of the page prints 800 GiBps)",
            ),
        ),
        "TPU-v5p": TpuSpec(
            name="TPU-v5p",
            year=2023,
            tensorcores=2,
            mxu_count=8,
            mxu_shape=(128, 128),
            bf16_flops=459 * TERA,
            int8_ops=None,
            fp8_flops=459 * TERA,
            hbm_bytes=95 * GIB,
            hbm_bandwidth=2765 * GB,
            sources=_sources(
                year=_CLOUD_V5P + " (announced December 2023)",
                tensorcores=_CLOUD_7X + ": 2 TensorCores per chip",
                mxu_count=_CLOUD_V5P + ": four MXUs per TensorCore",
                mxu_shape=_CLOUD_ARCH,
                bf16_flops=_CLOUD_V5P + ": 459 TFLOPs (bf16)",
                int8_ops="not printed on the pages cited here (the v5p page and the TPU7x table)",
                fp8_flops=_CLOUD_7X + ": 459 TFLOPs (FP8), the bf16 rate: no faster fp8 path",
                hbm_bytes=_CLOUD_7X + ": 95 GiB (the v5p page prints 'HBM2e 95 GB')",
                hbm_bandwidth=_CLOUD_V5P + ": 2765 GBps",
            ),
        ),
        "TPU-v6e": TpuSpec(
            name="TPU-v6e",
            year=2024,
            tensorcores=1,
            mxu_count=2,
            mxu_shape=(256, 256),
            bf16_flops=918 * TERA,
            int8_ops=1836 * TERA,
            fp8_flops=918 * TERA,
            hbm_bytes=32 * GIB,
            hbm_bandwidth=1638 * GB,
            sources=_sources(
                year=_CLOUD_V6E + " (Trillium, announced May 2024)",
                tensorcores=_CLOUD_V6E + ": one TensorCore per chip",
                mxu_count=_CLOUD_V6E
                + ": two 256x256 MXUs per TensorCore. DOUBTFUL: 2 x 256 x 256 MACs x 2 FLOP at "
                "918 TFLOP/s would need a 3.5 GHz clock, so the count (or the published shape) "
                "leaves something out; never derive a clock from it",
                mxu_shape=_CLOUD_V6E + ": two 256x256 MXUs per TensorCore",
                bf16_flops=_CLOUD_V6E + ": 918 TFLOPs (bf16)",
                int8_ops=_CLOUD_V6E + ": 1836 TOPs (int8)",
                fp8_flops=_CLOUD_7X + ": 918 TFLOPs (FP8), the bf16 rate",
                hbm_bytes=_CLOUD_7X + ": 32 GiB (the v6e page prints '32 GB')",
                hbm_bandwidth=_CLOUD_V6E + ": 1638 GBps",
            ),
        ),
        "TPU7x": TpuSpec(
            name="TPU7x",
            year=2025,
            tensorcores=2,
            mxu_count=None,
            mxu_shape=None,
            bf16_flops=2307 * TERA,
            int8_ops=None,
            fp8_flops=4614 * TERA,
            hbm_bytes=192 * GIB,
            hbm_bandwidth=7380 * GB,
            sources=_sources(
                year=_CLOUD_7X + " (Ironwood, announced April 2025)",
                tensorcores=_CLOUD_7X + ": 2 TensorCores (and 4 SparseCores) per chip",
                bf16_flops=_CLOUD_7X + ": 2307 TFLOPs (BF16)",
                fp8_flops=_CLOUD_7X + ": 4614 TFLOPs (FP8)",
                hbm_bytes=_CLOUD_7X + ": 192 GiB",
                hbm_bandwidth=_CLOUD_7X + ": 7380 GB/s",
            ),
        ),
    }
)


def names() -> list[str]:
    """The CPUs, then the TPUs in order of generation."""
    return [*CPUS, *TPUS]


def get(name: str) -> CpuSpec | TpuSpec:
    """The figures for ``name`` (one of :func:`names`)."""
    if name in CPUS:
        return CPUS[name]
    if name in TPUS:
        return TPUS[name]
    raise KeyError(f"no figures for {name!r}; known processors: {', '.join(names())}")
