"""Time the course's solution kernels on a GPU against the device's measured ceilings.

    python benchmarks/kernels.py            # every registered kernel, then the stride sweep
    python benchmarks/kernels.py --only transpose_tiled copy_grid_stride

Ceilings are measured on the same GPU, not taken from datasheets: a large device-to-device copy
(``cuMemcpyDtoD`` through Numba; bytes read + bytes written per second) and cuBLAS SGEMM (through
CuPy or PyTorch with TF32 off; 2 n^3 FLOP per n x n product). Each kernel is checked against a
NumPy result first, then timed with device events (``gu.bench``: warm-up, repeats, median). The
table gives the median time, the achieved GB/s or GFLOP/s, the percentage of its ceiling and the
target (on an H100-class GPU: copy, transpose and reduction at 80% or more of copy
bandwidth; tiled fp32 matmul at 50% or more of cuBLAS SGEMM). Results are recorded with
``gu.reference.save("kernels", ...)`` and the bandwidth-vs-stride sweep of chapter 04 with
``gu.reference.save("memory_stride", ...)``; notebooks show them on the simulator.
On the simulator this script refuses: its timings would say nothing about a GPU.

Registering kernels (chapters 05, 06, ...): add a module ``benchmarks/kernels_chNN.py`` with a
function ``benchmarks(tiny: bool) -> list[KernelBenchmark]``; it is found automatically::

    from kernels import KernelBenchmark   # this file (it registers itself as module `kernels`)

    def benchmarks(tiny):
        n = 1 << 10 if tiny else 1 << 26
        def setup():
            ...                  # allocate device arrays with cuda.to_device / device_array
            def run():           # one launch, asynchronous (no synchronize inside)
                my_kernel[blocks, threads](d_x, d_out)
            def verify():        # raise AssertionError when the result is wrong
                np.testing.assert_allclose(d_out.copy_to_host(), expected, rtol=1e-5)
            return run, verify
        return [KernelBenchmark("reduce_shared", f"n = {n:,}", setup, bytes=4 * n, flops=n,
                                ceiling="copy", target=0.8)]

``tiny=True`` gives sizes the simulator can run (tests/test_benchmark_kernels.py runs every
registered benchmark's setup, run and verify on the simulator that way, so a broken kernel is
caught without a GPU). ``bytes`` are the DRAM bytes one run must move at least (reads + writes);
``ceiling`` is ``"copy"`` (compared by bytes/s) or ``"sgemm"`` (compared by FLOP/s); ``target``
is the fraction of the ceiling to reach, or None for kernels shown only for comparison;
``host_bytes`` are the bytes of NumPy arrays its setup and verify make and compare on the host.
``benchmarks(tiny=False)`` must not touch the GPU: sizes only, everything else in ``setup``.

Budget: the whole script must finish within ``BUDGET_S`` seconds on an H100. The first H100 run
had not finished 60 s after its ceilings (1 GiB arrays, made and checked on the host, for every
chapter-04 kernel). :func:`estimate_seconds` bounds the work from the sizes and repeats chosen,
with pessimistic rates (``ESTIMATE_RATES``), and a CPU test keeps it under the budget; each
kernel's wall time is printed and recorded, so a GPU run shows where the time went.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import gpu_utils as gu

sys.modules.setdefault("kernels", sys.modules[__name__])  # `from kernels import ...` finds us
HERE = Path(__file__).resolve().parent

CEILINGS = ("copy", "sgemm")
COPY_BYTES = 1 << 28  # 256 MiB source: five times the largest L2 (50 MB on an H100)
SGEMM_N = 8192
WARMUP, REPEAT = 2, 10  # gu.bench's calls per kernel: the first run and verify come before
BUDGET_S = 75  # the whole script on an H100, ceilings and stride sweep included
#: Pessimistic rates for :func:`estimate_seconds` (an H100 measured 2,593 GB/s of copy and
#: 51 TFLOP/s of SGEMM, reference_data/kernels.json when recorded; the host makes and checks
#: NumPy arrays at well over 0.5 GB/s; numba compiles a kernel in well under 2 s).
ESTIMATE_RATES = {
    "copy": 1.0e12,
    "sgemm": 20e12,
    "slowest_fraction": 0.05,  # a kernel without a target may run at 5% of its ceiling
    "host": 0.5e9,
    "compile_s": 2.0,
}


@dataclass(frozen=True)
class KernelBenchmark:
    """One kernel at one size; see the module docstring for the fields."""

    name: str
    size: str
    setup: Callable[[], tuple[Callable[[], None], Callable[[], None]]]
    bytes: float
    flops: float = 0.0
    ceiling: str = "copy"
    target: float | None = None
    host_bytes: float = 0.0

    def __post_init__(self) -> None:
        if self.ceiling not in CEILINGS:
            raise ValueError(f"{self.name}: ceiling must be one of {CEILINGS}")

    def estimate_seconds(self, rates: dict[str, float] = ESTIMATE_RATES) -> float:
        """A pessimistic bound on this entry's time: compile, host arrays, and every run
        (first, warm-up and timed) at its target, or at the slowest fraction without one."""
        fraction = self.target or rates["slowest_fraction"]
        work = self.bytes if self.ceiling == "copy" else self.flops
        per_run = work / (fraction * rates[self.ceiling])
        return (
            rates["compile_s"] + self.host_bytes / rates["host"] + (1 + WARMUP + REPEAT) * per_run
        )


def discover(tiny: bool = False) -> list[KernelBenchmark]:
    """Every benchmark of every ``benchmarks/kernels_ch*.py`` module, in chapter order."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    found = []
    for path in sorted(HERE.glob("kernels_ch*.py")):
        module = importlib.import_module(path.stem)
        found += module.benchmarks(tiny)
    return found


def estimate_seconds(benchmarks: list[KernelBenchmark], rates: dict = ESTIMATE_RATES) -> float:
    """A pessimistic bound on the whole script: ceilings, every entry, the stride sweep."""
    copy = (1 + WARMUP + REPEAT) * 2 * COPY_BYTES / rates["copy"] + COPY_BYTES / rates["host"]
    sgemm = (1 + WARMUP + REPEAT) * 2.0 * SGEMM_N**3 / rates["sgemm"] + rates["compile_s"]
    sweep = sum(  # each stride moves whole 32-byte sectors: min(32, 4 s) per 4 useful bytes read
        (1 + WARMUP + REPEAT) * STRIDE_N * (4 + 32 * min(8, s)) / rates["copy"] for s in STRIDES
    )
    return (
        copy
        + sgemm
        + sweep
        + rates["compile_s"]
        + sum(b.estimate_seconds(rates) for b in benchmarks)
    )


# --- ceilings ---------------------------------------------------------------------------------


def copy_ceiling() -> float:
    """Bytes per second (read + written) of a large device-to-device copy."""
    from numba import cuda

    n = COPY_BYTES // 4
    source = cuda.to_device(np.arange(n, dtype=np.float32))
    target = cuda.device_array_like(source)
    result = gu.bench(lambda: target.copy_to_device(source), bytes=2 * COPY_BYTES, target="gpu")
    assert np.array_equal(target[:1000].copy_to_host(), np.arange(1000, dtype=np.float32))
    return result.bytes_per_s


def sgemm_ceiling() -> tuple[float, str]:
    """FLOP/s of cuBLAS SGEMM (fp32, TF32 off) and the library that called it."""
    n = SGEMM_N
    flops = 2.0 * n**3
    if gu.backends.cupy_usable():
        import cupy

        a = cupy.random.random((n, n), dtype=cupy.float32)
        b = cupy.random.random((n, n), dtype=cupy.float32)
        result = gu.bench(lambda: cupy.matmul(a, b), flops=flops, target="gpu")
        return result.flops_per_s, f"CuPy {cupy.__version__} (cuBLAS)"
    if gu.backends.torch_device() == "cuda":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False  # plain fp32 SGEMM, not TF32 tensor cores
        a = torch.rand((n, n), device="cuda")
        b = torch.rand((n, n), device="cuda")
        result = gu.bench(lambda: torch.matmul(a, b), flops=flops, target="gpu")
        return result.flops_per_s, f"PyTorch {torch.__version__} (cuBLAS, TF32 off)"
    raise RuntimeError("neither CuPy nor PyTorch can use the GPU here: no SGEMM ceiling")


# --- the bandwidth-vs-stride sweep of chapter 04 ----------------------------------------------

STRIDES = (1, 2, 4, 8, 16, 32)
STRIDE_N = 1 << 25


def stride_sweep(n: int = STRIDE_N) -> list[dict]:
    """Useful GB/s of out[i] = a[i * stride] for each stride (n float32 reads and writes)."""
    from numba import cuda

    @cuda.jit
    def strided_copy(a, out, stride):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i * stride]

    rows = []
    threads = 256
    blocks = (n + threads - 1) // threads
    for stride in STRIDES:
        source = cuda.device_array(n * stride, dtype=np.float32)  # up to 4 GiB: no host copy
        source[: 8 * stride].copy_to_device(np.arange(8 * stride, dtype=np.float32))
        out = cuda.device_array(n, dtype=np.float32)
        strided_copy[blocks, threads](source, out, stride)
        cuda.synchronize()
        assert out[:8].copy_to_host().tolist() == [float(stride * i) for i in range(8)]
        useful = 2 * 4 * n  # bytes the kernel asks for: one float32 read and one written

        def launch(source=source, out=out, stride=stride) -> None:
            strided_copy[blocks, threads](source, out, stride)

        result = gu.bench(launch, bytes=useful, warmup=WARMUP, repeat=REPEAT)
        gbps = useful / result.median / 1e9
        rows.append({"stride": stride, "seconds": result.median, "useful_GBps": gbps})
        del source, out
    return rows


# --- main -------------------------------------------------------------------------------------


def measure(benchmark: KernelBenchmark, ceilings: dict[str, float]) -> dict:
    import time

    from numba import cuda

    began = time.perf_counter()
    run, verify = benchmark.setup()
    run()
    cuda.synchronize()
    verify()
    result = gu.bench(
        run,
        bytes=benchmark.bytes or None,
        flops=benchmark.flops or None,
        warmup=WARMUP,
        repeat=REPEAT,
    )
    if benchmark.ceiling == "copy":
        achieved, unit = result.bytes_per_s, "GB/s"
    else:
        achieved, unit = result.flops_per_s, "GFLOP/s"
    fraction = achieved / ceilings[benchmark.ceiling]
    return {
        "kernel": benchmark.name,
        "size": benchmark.size,
        "median_s": result.median,
        "iqr_s": result.spread,
        "achieved": achieved / 1e9,
        "unit": unit,
        "ceiling": benchmark.ceiling,
        "pct_of_ceiling": 100 * fraction,
        "target_pct": None if benchmark.target is None else 100 * benchmark.target,
        "met": None if benchmark.target is None else fraction >= benchmark.target,
        "wall_s": time.perf_counter() - began,  # setup, check and timing together
    }


def render(rows: list[dict]) -> str:
    header = f"{'kernel':<26} {'size':<18} {'median':>10} {'achieved':>16} {'% ceiling':>10} {'target':>8}  met"
    lines = [header, "-" * len(header)]
    for r in rows:
        target = f"{r['target_pct']:.0f}%" if r["target_pct"] is not None else "-"
        met = {True: "yes", False: "NO", None: ""}[r["met"]]
        lines.append(
            f"{r['kernel']:<26} {r['size']:<18} {r['median_s'] * 1e3:>8.3f}ms "
            f"{r['achieved']:>10,.1f} {r['unit']:<5} {r['pct_of_ceiling']:>9.1f}% {target:>8}  {met}"
        )
    return "\n".join(lines)


def refuse_on_simulator() -> bool:
    if gu.mode == "gpu":
        return False
    print(
        "benchmarks/kernels.py measures real GPU performance, but this machine runs Numba's CUDA "
        f"simulator ({gu.runtime.mode_reason}); simulator timings say nothing about a GPU. Run "
        "it on a machine with an NVIDIA GPU (`python -m gpu_utils doctor` checks one).",
        file=sys.stderr,
    )
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="kernel names to run (default: all)")
    parser.add_argument("--no-stride", action="store_true", help="skip the stride sweep")
    parser.add_argument("--no-save", action="store_true", help="print only; record nothing")
    args = parser.parse_args(argv)
    if refuse_on_simulator():
        return 2
    print(gu.banner())
    copy = copy_ceiling()
    sgemm, library = sgemm_ceiling()
    ceilings = {"copy": copy, "sgemm": sgemm}
    print(
        f"Ceilings: device-to-device copy {copy / 1e9:,.0f} GB/s; SGEMM {sgemm / 1e12:,.1f} TFLOP/s via {library}"
    )
    chosen = [b for b in discover() if not args.only or b.name in args.only]
    rows = []
    for benchmark in chosen:
        rows.append(measure(benchmark, ceilings))
        print(f"{benchmark.name}: done in {rows[-1]['wall_s']:.1f} s", flush=True)
    print(render(rows))
    results = {
        "ceilings": {
            "copy_bytes_per_s": copy,
            "sgemm_flops_per_s": sgemm,
            "sgemm_library": library,
        },
        "rows": rows,
    }
    if not args.no_save:
        print(f"Recorded {gu.reference.save('kernels', results)}")
    if not args.no_stride:
        sweep = stride_sweep()
        for row in sweep:
            print(f"stride {row['stride']:>2}: {row['useful_GBps']:,.0f} GB/s useful")
        if not args.no_save:
            print(
                f"Recorded {gu.reference.save('memory_stride', {'copy_bytes_per_s': copy, 'rows': sweep})}"
            )
    missed = [r["kernel"] for r in rows if r["met"] is False]
    if missed:
        print(f"Below target: {', '.join(missed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
