"""numba-cuda's simulator against the course's own (gpu_utils.sim, issue 29), side by side in one
process, on the lab kernels: threads per second on each, their ratio, and a check that both
engines' outputs are equal. Not a timed test: a benchmark to run by hand (simulator timings, not
GPU performance)::

    .venv/bin/python benchmarks/sim_speed.py            # every kernel
    .venv/bin/python benchmarks/sim_speed.py --quick    # smaller sizes, a quick look

Both engines run the same launch on copies of the same inputs (the "numba" column's size is
kept small because numba-cuda's simulator runs one OS thread per CUDA thread); the course's
engine then runs again at a larger size ("large"), where its rate is steadier; "ratio" compares
the two engines on the same launch only. Matmul's rate falls with size: each thread does n
multiply-adds. The course's engine runs a launch of 2,048 threads or more in lockstep (every
thread of a chunk of blocks at once, :mod:`gpu_utils.sim.lockstep`) when it can vouch for the
result, else thread by thread; "path" says which ran the large launch, and "by thread" gives the
thread-by-thread rate on it (``GPU_COURSE_SIM_LOCKSTEP=never``). Each
course timing is the best of three launches (the first also compiles the kernel's rewrite);
numba's is one launch. The kernels are the labs' (the copies in benchmarks/kernels_ch0*.py, and
lab 03's and lab 05's solutions here).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

os.environ.setdefault("GPU_COURSE_MODE", "simulator")  # both engines are simulators

import numpy as np

import gpu_utils as gu  # before numba: it makes numba load its simulator
from gpu_utils import sim
from gpu_utils.sim import lockstep
from gpu_utils.sim._numba_sim import launch_on_numba

# isort: split
from numba import cuda, float32, int32

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels_ch04  # the labs' kernels, beside this script
import kernels_ch05
import kernels_ch06

BLOCK = kernels_ch05.BLOCK  # lab 05's block for the scan and the histogram
NBINS = 16  # lab 05's histogram


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def add_2d(a, b, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = a[row, col] + b[row, col]


@cuda.jit
def block_scan(x, out):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    offset = 1
    while offset < BLOCK:
        addend = s[t - offset] if t >= offset else 0.0
        cuda.syncthreads()
        s[t] += addend
        cuda.syncthreads()
        offset *= 2
    if i < x.size:
        out[i] = s[t]


@cuda.jit
def histogram_shared(values, bins):
    local = cuda.shared.array(NBINS, int32)
    t = cuda.threadIdx.x
    if t < NBINS:
        local[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < values.size:
        cuda.atomic.add(local, values[i], 1)
    cuda.syncthreads()
    if t < NBINS:
        cuda.atomic.add(bins, t, local[t])


MATMUL_TILE = 16
matmul_tiled = kernels_ch06.tiled(MATMUL_TILE)


@dataclass
class Case:
    name: str
    kernel: object
    make: Callable[[int], tuple]  # size -> (grid, block, args)
    small: int
    large: int


def _blocks(n: int, per_block: int) -> int:
    return (n + per_block - 1) // per_block


def _rng():
    return np.random.default_rng(29)


def _vector(n):
    a, b = _rng().random(n, dtype=np.float32), _rng().random(n, dtype=np.float32)
    return _blocks(n, 256), 256, (a, b, np.full(n, np.nan, np.float32))


def _grid_stride(n):
    return (
        _blocks(n, 128 * 4),
        128,
        (  # four elements per thread
            _rng().random(n, dtype=np.float32),
            np.full(n, np.nan, np.float32),
        ),
    )


def _matrix_2d(n):
    a, b = _rng().random((n, n), dtype=np.float32), _rng().random((n, n), dtype=np.float32)
    return (_blocks(n, 16), _blocks(n, 16)), (16, 16), (a, b, np.full((n, n), np.nan, np.float32))


def _transpose(n):
    a = _rng().random((n, n), dtype=np.float32)
    tile = kernels_ch04.TILE
    grid = (_blocks(n, tile), _blocks(n, tile))
    return grid, (tile, kernels_ch04.ROWS), (a, np.full((n, n), np.nan, np.float32))


def _reduction(n):
    x = _rng().random(n, dtype=np.float32)
    return _blocks(n, BLOCK), BLOCK, (x, np.zeros(_blocks(n, BLOCK), np.float32))


def _shuffle_reduction(n):
    x = _rng().random(n, dtype=np.float32)
    return _blocks(n, BLOCK), BLOCK, (x, np.zeros(1, np.float32))


def _scan(n):
    return _blocks(n, BLOCK), BLOCK, (_rng().random(n, dtype=np.float32), np.zeros(n, np.float32))


def _histogram(n):
    values = _rng().integers(0, NBINS, n).astype(np.int32)
    return _blocks(n, BLOCK), BLOCK, (values, np.zeros(NBINS, np.int32))


def _matmul(n):
    a, b = _rng().random((n, n), dtype=np.float32), _rng().random((n, n), dtype=np.float32)
    grid = (_blocks(n, MATMUL_TILE), _blocks(n, MATMUL_TILE))
    return grid, (MATMUL_TILE, MATMUL_TILE), (a, b, np.zeros((n, n), np.float32))


CASES = [
    Case("vector add", vector_add, _vector, 4_000, 1_000_000),
    Case(
        "grid-stride loop (copy, 4/thread)",
        kernels_ch04.copy_grid_stride,
        _grid_stride,
        8_192,
        4_000_000,
    ),
    Case("2-D indexing (add)", add_2d, _matrix_2d, 96, 1_024),
    Case("transpose, naive (uncoalesced)", kernels_ch04.transpose_naive, _transpose, 128, 1_024),
    Case("transpose, tiled (coalesced)", kernels_ch04.transpose_tiled, _transpose, 128, 1_024),
    Case("shared reduction", kernels_ch05.reduce_sequential, _reduction, 2_048, 262_144),
    Case(
        "warp-shuffle reduction",
        kernels_ch05.reduce_shuffle_atomic,
        _shuffle_reduction,
        2_048,
        262_144,
    ),
    Case("block scan", block_scan, _scan, 2_048, 262_144),
    Case("histogram, shared + atomics", histogram_shared, _histogram, 2_048, 262_144),
    Case("tiled matmul (16 x 16)", matmul_tiled, _matmul, 64, 256),
]


def _threads(grid, block) -> int:
    dims = [
        grid if isinstance(grid, tuple) else (grid,),
        block if isinstance(block, tuple) else (block,),
    ]
    return int(np.prod(dims[0]) * np.prod(dims[1]))


def _copies(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _course_seconds(case: Case, grid, block, args, repeats: int = 3) -> tuple[float, tuple]:
    best, result = float("inf"), args
    for _ in range(repeats):
        result = _copies(args)
        start = time.perf_counter()
        sim.launch(case.kernel, grid, block, *result)
        best = min(best, time.perf_counter() - start)
    return best, result


def run(case: Case, quick: bool) -> dict:
    small = case.small
    grid, block, args = case.make(small)
    threads = _threads(grid, block)
    oracle = _copies(args)
    start = time.perf_counter()
    launch_on_numba(case.kernel[grid, block], *oracle)
    numba_s = time.perf_counter() - start
    course_s, ours = _course_seconds(case, grid, block, args)
    equal = all(
        np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
        for x, y in zip(oracle, ours, strict=True)
        if isinstance(x, np.ndarray)
    )
    large = case.large // 4 if quick else case.large
    if case.make in (_matrix_2d, _transpose, _matmul) and quick:
        large = case.large // 2
    grid_l, block_l, args_l = case.make(large)
    lockstep.LAST["outcome"] = None
    course_large_s, _ = _course_seconds(case, grid_l, block_l, args_l)
    path = "lockstep" if lockstep.LAST["outcome"] == "lockstep" else "by thread"
    saved = os.environ.get(lockstep.ENV)
    os.environ[lockstep.ENV] = "never"
    try:
        by_thread_s, _ = _course_seconds(case, grid_l, block_l, args_l, repeats=1)
    finally:
        if saved is None:
            os.environ.pop(lockstep.ENV)
        else:
            os.environ[lockstep.ENV] = saved
    return {
        "kernel": case.name,
        "threads": threads,
        "numba": threads / numba_s,
        "course": threads / course_s,
        "ratio": numba_s / course_s,
        "large_threads": _threads(grid_l, block_l),
        "course_large": _threads(grid_l, block_l) / course_large_s,
        "path": path,
        "by_thread": _threads(grid_l, block_l) / by_thread_s,
        "equal": equal,
    }


def render(rows: list[dict]) -> str:
    head = (
        f"{'kernel':33} {'threads':>7} {'numba thr/s':>11} {'course thr/s':>12} {'ratio':>6} "
        f"{'large':>9} {'course thr/s':>12} {'path':>9} {'by thread':>10} equal"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['kernel']:33} {r['threads']:>7,} {r['numba']:>11,.0f} {r['course']:>12,.0f} "
            f"{r['ratio']:>5,.0f}x {r['large_threads']:>9,} {r['course_large']:>12,.0f} "
            f"{r['path']:>9} {r['by_thread']:>10,.0f} {'yes' if r['equal'] else 'NO'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller large sizes")
    parser.add_argument("--only", help="run only the kernels whose name contains this text")
    options = parser.parse_args(argv)
    if gu.mode != "simulator":
        print("run in simulator mode (GPU_COURSE_MODE=simulator): this compares the two engines")
        return 2
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"simulator timings, not GPU performance; {os.cpu_count()} CPUs, load average "
        f"{load:.1f} at the start"
    )
    rows = []
    for case in CASES:
        if options.only and options.only not in case.name:
            continue
        rows.append(run(case, options.quick))
        print(render(rows[-1:]).splitlines()[-1] if len(rows) > 1 else render(rows), flush=True)
    print()
    print(render(rows))
    if not options.only and not options.quick:
        print()
        for line in teaching_sizes():
            print(line, flush=True)
    return 0 if all(r["equal"] for r in rows) else 1


def teaching_sizes() -> list[str]:
    """Seconds for one launch at a size that teaches (issue 29), on the course's engine."""
    lines = ["sizes that teach (one launch, the course's engine; simulator time):"]
    rng = _rng()
    x = rng.random(1 << 22, dtype=np.float32)
    partial = np.full((1 << 22) // kernels_ch05.BLOCK, np.nan, np.float32)
    seconds, path = _timed(
        kernels_ch05.reduce_sequential, partial.size, kernels_ch05.BLOCK, x, partial
    )
    ok = np.allclose(partial, x.reshape(-1, kernels_ch05.BLOCK).sum(axis=1), rtol=1e-5)
    lines.append(f"  shared reduction of 4 M values: {seconds:.2f} s ({path}, right: {ok})")
    n = 512
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    for tile in (16, 32):
        out = np.full((n, n), np.nan, np.float32)
        kernel = kernels_ch06.tiled(tile)
        seconds, path = _timed(kernel, (n // tile, n // tile), (tile, tile), a, b, out)
        ok = np.allclose(out, a.astype(np.float64) @ b, rtol=1e-4)
        lines.append(
            f"  512 x 512 tiled matmul, tiles of {tile}: {seconds:.2f} s ({path}, right: {ok})"
        )
    return lines


def _timed(kernel, grid, block, *args) -> tuple[float, str]:
    lockstep.LAST["outcome"] = None
    start = time.perf_counter()
    sim.launch(kernel, grid, block, *args)
    seconds = time.perf_counter() - start
    return seconds, "lockstep" if lockstep.LAST["outcome"] == "lockstep" else "by thread"


if __name__ == "__main__":
    raise SystemExit(main())
