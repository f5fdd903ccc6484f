"""Compare gu.trace's counts with Nsight Compute's for the same kernels (chapter 04).

    python benchmarks/trace_vs_ncu.py          # on a GPU machine where `ncu` works

For each kernel below, gu.trace runs it on the simulator and counts global load/store requests
and 32-byte sectors and shared-memory bank conflicts; then this script runs itself under
``ncu --csv --metrics ...`` (child mode, one launch of the same kernel with the same inputs on
the GPU) and reads Nsight Compute's counters:

* ``l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum`` and
  ``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum`` (requests and sectors),
* ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum`` (bank conflicts).

It prints both side by side and records them with ``gu.reference.save("trace_vs_ncu", ...)``.
Expect equal sector and request counts for these simple kernels; Nsight's bank-conflict counters
can include other causes of replays on some GPUs, so compare them as "zero vs many" first.
Profiling counters need permission (``ERR_NVGPUCTRPERM``): run as an administrator or enable
access for users (NVIDIA's "Development Tools Solutions" page explains how). Not run in the
session that wrote it (no GPU); it refuses clearly on the simulator.
"""

from __future__ import annotations

import argparse
import csv
import io
import shutil
import subprocess
import sys

import numpy as np
from numba import cuda, float32

import gpu_utils as gu

TILE, ROWS = 32, 8
PADDED = TILE + 1  # a shared array's shape must be numbers or global constants, not TILE + 1
METRICS = {
    "load requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "load sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "store requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "store sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "shared load bank conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared store bank conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
}


@cuda.jit
def strided_copy(a, out, stride):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i * stride]


@cuda.jit
def transpose_naive(a, out):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, ROWS):
        out[x, y + j] = a[y + j, x]


@cuda.jit
def transpose_unpadded(a, out):
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x, y = cuda.blockIdx.x * TILE + tx, cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, ROWS):
        tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x, y = cuda.blockIdx.y * TILE + tx, cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, ROWS):
        out[y + j, x] = tile[tx, ty + j]


@cuda.jit
def transpose_padded(a, out):
    tile = cuda.shared.array((TILE, PADDED), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x, y = cuda.blockIdx.x * TILE + tx, cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, ROWS):
        tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x, y = cuda.blockIdx.y * TILE + tx, cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, ROWS):
        out[y + j, x] = tile[tx, ty + j]


def _cases() -> dict[str, tuple]:
    """name -> (kernel, griddim, blockdim, args factory); small enough for the simulator."""
    n = 1024
    square = 64

    def strided(stride):
        return lambda: (np.arange(n * stride, dtype=np.float32), np.zeros(n, np.float32), stride)

    def matrix():
        return (
            np.arange(square * square, dtype=np.float32).reshape(square, square),
            np.zeros((square, square), np.float32),
        )

    grid = (square // TILE, square // TILE)
    return {
        "copy, stride 1": (strided_copy, n // 256, 256, strided(1)),
        "copy, stride 2": (strided_copy, n // 256, 256, strided(2)),
        "copy, stride 32": (strided_copy, n // 256, 256, strided(32)),
        "transpose, naive": (transpose_naive, grid, (TILE, ROWS), matrix),
        "transpose, tiled": (transpose_unpadded, grid, (TILE, ROWS), matrix),
        "transpose, tiled + padding": (transpose_padded, grid, (TILE, ROWS), matrix),
    }


def trace_counts(name: str) -> dict[str, float]:
    kernel, grid, block, make_args = _cases()[name]
    report = gu.trace.analyze(kernel, grid, block, *make_args(), divergence=False)
    return {
        "load requests": report.global_loads.requests,
        "load sectors": report.global_loads.sectors,
        "store requests": report.global_stores.requests,
        "store sectors": report.global_stores.sectors,
        "shared load bank conflicts": report.shared_loads.bank_conflicts,
        "shared store bank conflicts": report.shared_stores.bank_conflicts,
    }


def child(name: str) -> None:
    """Launch one case once on the GPU (what ncu profiles)."""
    kernel, grid, block, make_args = _cases()[name]
    args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in make_args()]
    kernel[grid, block](*args)
    cuda.synchronize()


def ncu_counts(name: str, ncu: str) -> dict[str, float]:
    kernel = _cases()[name][0]
    command = [
        ncu,
        "--csv",
        "--metrics",
        ",".join(METRICS.values()),
        "--kernel-name",
        f"regex:{kernel.py_func.__name__}",
        "--launch-count",
        "1",
        sys.executable,
        __file__,
        "--child",
        name,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or "ERR_NVGPUCTRPERM" in done.stdout + done.stderr:
        raise RuntimeError(f"ncu failed ({done.returncode}): {(done.stderr or done.stdout)[-600:]}")
    rows = [line for line in done.stdout.splitlines() if line.startswith('"')]
    values = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        for label, metric in METRICS.items():
            if row.get("Metric Name") == metric:
                values[label] = float(row["Metric Value"].replace(",", ""))
    missing = set(METRICS) - set(values)
    if missing:
        raise RuntimeError(
            f"ncu reported no value for {sorted(missing)}; its output:\n{done.stdout[-800:]}"
        )
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--no-save", action="store_true", help="print only; record nothing")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    if gu.mode != "gpu":
        print(
            "benchmarks/trace_vs_ncu.py compares the trace with Nsight Compute on a real GPU; "
            "this machine runs the simulator. Run it on a GPU machine with `ncu` installed.",
            file=sys.stderr,
        )
        return 2
    ncu = shutil.which("ncu")
    if ncu is None:
        print(
            "Nsight Compute's `ncu` is not on PATH: install Nsight Compute first.", file=sys.stderr
        )
        return 2
    print(gu.banner())
    rows = []
    for name in _cases():
        traced = trace_counts(name)
        measured = ncu_counts(name, ncu)
        for label in METRICS:
            rows.append(
                {"kernel": name, "metric": label, "trace": traced[label], "ncu": measured[label]}
            )
            print(
                f"{name:<28} {label:<28} trace {traced[label]:>10,.0f}   ncu {measured[label]:>10,.0f}"
            )
    if not args.no_save:
        print(f"Recorded {gu.reference.save('trace_vs_ncu', rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
