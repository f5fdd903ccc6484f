"""Exercises of lab 04, memory (chapter 04): coalesced copies, a tiled transpose without bank
conflicts, and a shared-memory stencil. Correct results are not enough: the checker traces each
kernel (gu.trace) and asks for coalesced accesses, no bank conflicts and no races."""

from __future__ import annotations

import numpy as np

from ._kernels import (
    Case,
    Mismatch,
    blocks_for,
    coalesced,
    index_error_target,
    kernel_exercise,
    max_loads_per_element,
    max_stores_per_element,
    no_bank_conflicts,
    poisoned,
    race_hint,
    random_inputs,
    uses_shared_memory,
)
from ._registry import register

CHAPTER = "04_memory"

# --- copy_grid_stride -------------------------------------------------------------------------

COPY_BLOCKS, COPY_THREADS = 2, 64  # 128 threads in all: fewer than elements, so each does several

_GRID_STRIDE_HINT = (
    "use a grid-stride loop: `for k in range(cuda.grid(1), src.size, cuda.gridsize(1)):`. In each "
    "pass the grid's 128 threads copy 128 consecutive elements, so a warp's 32 accesses are "
    "neighbours."
)


def _copy_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for n in (100, 1, 128, 1000, 4099):  # under, at and well over the grid's 128 threads
        (src,) = random_inputs(rng, n)
        cases.append(
            Case(
                label=f"n = {n}",
                griddim=COPY_BLOCKS,
                blockdim=COPY_THREADS,
                inputs=(src,),
                outputs=poisoned(n),
                expected=(src.copy(),),
            )
        )
    return cases


def _copy_trace_case(rng: np.random.Generator) -> Case:
    (src,) = random_inputs(rng, 4096)  # a multiple of 32 elements: every warp request is whole
    return Case("n = 4096", COPY_BLOCKS, COPY_THREADS, (src,), poisoned(4096), (src.copy(),))


def _copy_hint(case: Case, mismatch: Mismatch) -> str:
    n = mismatch.got.size
    written = ~np.isnan(mismatch.got)
    grid = COPY_BLOCKS * COPY_THREADS
    if n > grid and written[:grid].all() and not written[grid:].any():
        return (
            f"only the first {grid} elements were copied: the grid has {grid} threads, fewer "
            "than elements, so each thread must copy several. " + _GRID_STRIDE_HINT
        )
    if n > 1 and written[:-1].all() and not written[-1]:
        return (
            "only the last element is missing: the loop must run up to src.size, not src.size - 1."
        )
    first_block = np.arange(n) % grid < COPY_THREADS
    if (written == first_block).all():
        return (
            "only elements whose position in each pass of 128 falls in the first block were "
            "copied: start at the global index `cuda.grid(1)`, not `cuda.threadIdx.x`."
        )
    if mismatch.wrong.any():
        return "each dst[k] must get src[k] from the same position k."
    return "every element must be copied exactly once. " + _GRID_STRIDE_HINT


_COPY_GUARD_HINT = "keep every index below src.size: loop `while k < src.size` (or with range)."


def _index_error(error: str) -> bool:
    """True for an out-of-bounds index (error hints also receive warp errors)."""
    return getattr(error, "kind", "out_of_bounds") in ("out_of_bounds", "extra_threads")


def _copy_error_hint(case: Case, error: str) -> str:
    """Any index past the end of src or dst: the loop's bound (the grid has fewer threads than
    elements, so this is never a thread with no element)."""
    if not _index_error(error):
        return ""
    return _COPY_GUARD_HINT if index_error_target(case, error) in ("read", "write", "") else ""


def _copy_race_hint(race) -> str:
    if race.kind == "write-write":
        return (
            "two threads copied the same element. A grid-stride loop steps by the whole grid, "
            "`cuda.gridsize(1)` (blockDim.x * gridDim.x), so no two threads ever meet."
        )
    return race_hint(race)


register(
    kernel_exercise(
        id="copy_grid_stride",
        chapter=CHAPTER,
        title="A coalesced copy with a grid-stride loop",
        signature="copy_grid_stride(src, dst): 1-D float32 arrays of equal length; dst[k] = src[k]",
        launch_text=(
            f"1-D: always {COPY_BLOCKS} blocks of {COPY_THREADS} threads (128 threads), whatever "
            "the length, so each thread copies several elements; checked for coalescing"
        ),
        output_names=("dst",),
        cases=_copy_cases,
        hint=_copy_hint,
        guard_hint=_COPY_GUARD_HINT,
        error_hint=_copy_error_hint,
        requirements=(
            coalesced("src", "dst", hint=lambda array, direction: _chunk_hint(array, direction)),
            max_stores_per_element(
                "dst", 1.0, hint="step by the whole grid, cuda.gridsize(1), so no two threads meet."
            ),
        ),
        trace_case=_copy_trace_case,
        race_hint=_copy_race_hint,
    )
)


def _chunk_hint(array: str, direction: str) -> str:
    return (
        "each thread seems to copy its own contiguous chunk, so the 32 threads of a warp touch "
        "addresses a chunk apart: 32 different sectors. " + _GRID_STRIDE_HINT
    )


# --- transpose_tiled --------------------------------------------------------------------------

TILE, ROWS = 32, 8  # a 32x32 tile moved by 32x8 threads, 4 elements each (NVIDIA's classic layout)


def _transpose_case(rng: np.random.Generator, m: int, n: int) -> Case:
    (a,) = random_inputs(rng, (m, n))
    return Case(
        label=f"a {m}x{n}",
        griddim=(blocks_for(n, TILE), blocks_for(m, TILE)),
        blockdim=(TILE, ROWS),
        inputs=(a,),
        outputs=poisoned((n, m)),
        expected=(np.ascontiguousarray(a.T),),
    )


def _transpose_cases(rng: np.random.Generator) -> list[Case]:
    # one whole tile; then shapes that are not multiples of 32, tall and wide
    return [_transpose_case(rng, m, n) for m, n in ((32, 32), (17, 45), (70, 20))]


def _transpose_hint(case: Case, mismatch: Mismatch) -> str:
    (a,) = case.inputs
    got = mismatch.got
    m, n = a.shape
    tiles_not_transposed = np.full_like(got, np.nan)
    for ti in range(0, m, TILE):
        for tj in range(0, n, TILE):
            block = a[ti : ti + TILE, tj : tj + TILE]
            rows, cols = block.shape
            # the tile lands in the right place but its contents are copied, not transposed
            target = tiles_not_transposed[tj : tj + TILE, ti : ti + TILE]
            r, c = min(rows, target.shape[0]), min(cols, target.shape[1])
            target[:r, :c] = block[:r, :c]
    known = ~np.isnan(tiles_not_transposed) & ~np.isnan(got)
    if m == n and known.any() and np.allclose(got[known], tiles_not_transposed[known]):
        return (
            "each tile landed in the right place but was not transposed inside: write "
            "tile[ty + j, tx] = a[...] and read it back as tile[tx, ty + j]."
        )
    if np.isnan(got).all():
        return "nothing was written: each block writes its tile of `out` after cuda.syncthreads()."
    if mismatch.unwritten.any() and not mismatch.wrong.any():
        return (
            "part of `out` is unwritten: when reading the tile back, block (bx, by) writes rows "
            "bx*32 + ty + j and columns by*32 + tx of `out` (the block indices swap roles)."
        )
    return (
        "out[j, i] must equal a[i, j]. Load a[by*32 + ty + j, bx*32 + tx] into tile[ty + j, tx], "
        "then after cuda.syncthreads() write out[bx*32 + ty + j, by*32 + tx] = tile[tx, ty + j]."
    )


_TRANSPOSE_GUARD_HINT = (
    "check every element against the matrix edges: `if y + j < a.shape[0] and x < "
    "a.shape[1]:` when loading the tile, and `if y + j < out.shape[0] and x < "
    "out.shape[1]:` when storing it (x and y recomputed with the block indices swapped)."
)


def _transpose_error_hint(case: Case, error: str) -> str:
    if not _index_error(error):
        return ""
    if index_error_target(case, error) == "shared":
        return (
            f"the shared tile must hold the block's whole {TILE}x{TILE} tile, plus one column of "
            f"padding: `cuda.shared.array(({TILE}, {TILE + 1}), float32)` (numba needs the shape "
            f"as plain numbers or global constants, not `TILE + 1`), indexed tile[ty + j, tx] "
            "with j = 0, 8, 16, 24."
        )
    return _TRANSPOSE_GUARD_HINT


def _transpose_coalescing_hint(array: str, direction: str) -> str:
    if array == "out":
        return (
            "consecutive threads write down a column of `out`, 32 rows apart. Stage the tile in "
            "shared memory, then let threadIdx.x run along a row of `out` when writing it back."
        )
    return "consecutive threads (threadIdx.x) should read consecutive columns of a row of `a`."


register(
    kernel_exercise(
        id="transpose_tiled",
        chapter=CHAPTER,
        title="Transpose through a shared-memory tile, coalesced both ways, no bank conflicts",
        signature=(
            "transpose_tiled(a, out): a (M, N) float32, out (N, M); out[j, i] = a[i, j], "
            "staged through a 32x32 tile in shared memory"
        ),
        launch_text=(
            f"2-D: blocks of {TILE}x{ROWS} threads, grid (ceil(N/32), ceil(M/32)); block (bx, by) "
            "moves the 32x32 tile whose top-left corner is a[by*32, bx*32]; each thread moves 4 "
            "elements (rows ty, ty+8, ty+16, ty+24 of the tile)"
        ),
        output_names=("out",),
        cases=_transpose_cases,
        hint=_transpose_hint,
        guard_hint=_TRANSPOSE_GUARD_HINT,
        error_hint=_transpose_error_hint,
        requirements=(
            coalesced("a", "out", hint=_transpose_coalescing_hint),
            no_bank_conflicts(),
            uses_shared_memory(),
        ),
        trace_case=lambda rng: _transpose_case(rng, 64, 64),
    )
)


# --- stencil_shared ---------------------------------------------------------------------------

STENCIL_THREADS = 128  # four warps; the tile holds 128 + 2 elements (one halo cell each side)


def laplacian(x: np.ndarray, block: int | None = None, wrap: bool = False) -> np.ndarray:
    """x[i-1] - 2 x[i] + x[i+1] with zeros outside; ``block`` drops neighbours across block
    edges (a missing halo), ``wrap`` reads x[-1] and x[n] around the ends (a boundary mistake)."""
    x = x.astype(np.float64)
    left = np.concatenate(([x[-1] if wrap else 0.0], x[:-1]))
    right = np.concatenate((x[1:], [x[0] if wrap else 0.0]))
    if block is not None:
        index = np.arange(x.size)
        left[index % block == 0] = 0.0
        right[(index % block == block - 1)] = 0.0
    return (left - 2 * x + right).astype(np.float32)


def _stencil_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for n in (300, 1, 5, 128, 700):  # across blocks first, then tiny and exact sizes
        (x,) = random_inputs(rng, n)
        cases.append(
            Case(
                label=f"n = {n}",
                griddim=blocks_for(n, STENCIL_THREADS),
                blockdim=STENCIL_THREADS,
                inputs=(x,),
                outputs=poisoned(n),
                expected=(laplacian(x),),
            )
        )
    return cases


def _stencil_hint(case: Case, mismatch: Mismatch) -> str:
    (x,) = case.inputs
    got = mismatch.got
    if np.allclose(got, laplacian(x, block=STENCIL_THREADS), atol=1e-5):
        return (
            "wrong only next to block edges: the first and last threads of a block need a "
            "neighbour from the next block. Load the halo too: thread 0 also loads x[start - 1] "
            "into tile[0], and the last thread loads x[end] into the last cell (0 past the ends)."
        )
    if x.size > 1 and np.allclose(got, laplacian(x, wrap=True), atol=1e-5):
        return (
            "out[0] and out[n-1] used the element at the other end: x[-1] wraps around to the "
            "last element, in Python and in Numba on a GPU alike, so x[i - 1] at i = 0 silently "
            "reads x[n-1]. Guard it: outside 0..n-1 the input counts as 0."
        )
    if np.allclose(got, -laplacian(x), atol=1e-5):
        return "the signs are reversed: out[i] = x[i-1] - 2*x[i] + x[i+1]."
    if mismatch.unwritten.any():
        return "every i < n needs its out[i]: guard the write with `if i < x.size:`."
    return (
        "out[i] = x[i-1] - 2*x[i] + x[i+1], with 0 in place of x[-1] and x[n]. Read the three "
        "values from the shared tile: tile[t], tile[t + 1] and tile[t + 2] for thread t."
    )


_STENCIL_GUARD_HINT = (
    "every load and store needs its guard: threads past the end load 0 into the tile "
    "(`tile[t + 1] = x[i] if i < x.size else 0`) and write nothing."
)


def _stencil_error_hint(case: Case, error: str) -> str:
    if not _index_error(error):
        return ""
    if index_error_target(case, error) == "shared":
        return (
            f"the tile needs {STENCIL_THREADS + 2} cells: one per thread plus a halo cell on "
            f"each side, `cuda.shared.array({STENCIL_THREADS + 2}, float32)` (numba needs the "
            "size as a number or a global constant, not an expression); thread t keeps x[i] in "
            "tile[t + 1]."
        )
    return _STENCIL_GUARD_HINT


register(
    kernel_exercise(
        id="stencil_shared",
        chapter=CHAPTER,
        title="A three-point stencil that reads its inputs once, through shared memory",
        signature=(
            "stencil_shared(x, out): 1-D float32; out[i] = x[i-1] - 2*x[i] + x[i+1], taking "
            "x[-1] and x[n] as 0"
        ),
        launch_text=(
            f"1-D: {STENCIL_THREADS} threads per block, ceil(n / {STENCIL_THREADS}) blocks; stage "
            f"x in a shared tile of {STENCIL_THREADS + 2} elements (one halo cell each side)"
        ),
        output_names=("out",),
        cases=_stencil_cases,
        hint=_stencil_hint,
        guard_hint=_STENCIL_GUARD_HINT,
        error_hint=_stencil_error_hint,
        requirements=(
            max_loads_per_element(
                "x",
                1.25,
                hint=(
                    "you read each x from global memory about three times (once per neighbour). "
                    "Load it once into a shared tile, cuda.syncthreads(), then read the "
                    "neighbours from the tile."
                ),
            ),
            coalesced("x", "out"),
        ),
    )
)
