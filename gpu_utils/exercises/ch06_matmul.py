"""Exercises of lab 06, matrix multiplication (chapter 06): shared-memory tiles, register tiles,
a matrix-vector product with one warp per row, the traffic of a tiled product, and rounding fp32
to bf16.

The kernels are checked for correctness on several shapes (sizes that are not multiples of the
tile, K too) and, from the memory trace (``gu.trace``), for what they are about: the number of
values the matrix products load from global memory (and, for the shared-memory tiles, bank
conflicts), and coalesced reads for the matrix-vector product.
"""

from __future__ import annotations

import numpy as np

from ..one_gpu import matmul, precision
from ._kernels import (
    Case,
    Mismatch,
    TraceRequirement,
    blocks_for,
    coalesced,
    index_error_target,
    kernel_exercise,
    no_bank_conflicts,
    poisoned,
    race_hint,
    random_inputs,
)
from ._numeric import NumericAnswer, numeric_exercise
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register

CHAPTER = "06_matmul"
TILE = 8  # 8 x 8 = 64 threads: two warps, few enough for the simulator's syncthreads
BLOCK_TILE = 16  # the register-tiled kernel: 8 x 8 threads, each 2 x 2 outputs
K_STEP = 8

_ZERO_FILL_HINT = (
    "where a tile hangs over the edge of a or b (here K = {k} is not a multiple of {step}), load "
    "0.0 into the tile instead of skipping the load: `a_tile[ty, tx] = a[row, k0 + tx] if "
    "row < m and k0 + tx < K else 0.0`. A skipped element keeps the previous step's value."
)
_LOAD_GUARD_HINT = (
    "guard the loads into the tiles: for elements outside a or b, store 0.0 instead of reading, "
    "e.g. `a[row, k0 + tx] if row < m and k0 + tx < K else 0.0`. Guard the final write with "
    "`if row < m and col < n:`."
)


def _matmul_case(rng: np.random.Generator, m: int, k: int, n: int, per_block: int) -> Case:
    a, b = random_inputs(rng, (m, k), (k, n))
    return Case(
        label=f"a {m}x{k}, b {k}x{n}",
        griddim=(blocks_for(n, per_block), blocks_for(m, per_block)),
        blockdim=(TILE, TILE),
        inputs=(a, b),
        outputs=poisoned((m, n)),
        expected=((a.astype(np.float64) @ b).astype(np.float32),),
        rtol=1e-4,
        atol=1e-5 * k,
        extra={"m": m, "k": k, "n": n},
    )


def _traffic_requirement(block_tile: int, shape: tuple[int, int, int]) -> TraceRequirement:
    """Global loads of a and b at most what tiles of ``block_tile`` outputs per block need, for
    the traced case of (M, K, N) = ``shape``."""
    m, k, n = shape
    allowed = matmul.global_loads("tiled", m, n, k, block_tile)

    def check(report):
        # the only global arrays read are a and b (whatever the learner named them)
        loaded = sum(a.loads.accesses for a in report.arrays.values() if a.space == "global")
        if loaded <= allowed:
            return None
        what = (
            f"your kernel loaded {loaded:,} values of a and b from global memory; blocks that "
            f"each compute {block_tile}x{block_tile} outputs from shared tiles need only "
            f"{allowed:,} (one thread per output with no sharing: "
            f"{matmul.global_loads('naive', m, n, k):,})."
        )
        return what, _TRAFFIC_HINTS[block_tile]

    return TraceRequirement(f"at most {allowed:,} global loads of a and b", check)


_TRAFFIC_HINTS = {
    TILE: (
        "each thread should load ONE element of a and ONE of b per step into shared tiles "
        "(`a_tile[ty, tx] = ...`, `b_tile[ty, tx] = ...`), then, after cuda.syncthreads(), read "
        "the TILE values it needs from the tiles, not from a and b."
    ),
    BLOCK_TILE: (
        "the block must compute a 16x16 tile of out from 16x8 and 8x16 shared tiles, each "
        "thread 2x2 outputs: per step a thread loads two elements of a and two of b into the "
        "tiles, never reading a or b in the inner loop."
    ),
}


def _only_part_of_each_block_written(mismatch: Mismatch, per_block: int, part: int) -> bool:
    """True when, in every per_block x per_block tile of out, exactly the top-left part x part
    corner was written (the one-output-per-thread pattern in a 2x2-per-thread launch)."""
    written = ~np.isnan(mismatch.got)
    rows, cols = np.indices(written.shape)
    corner = (rows % per_block < part) & (cols % per_block < part)
    return bool((written == corner).all()) and not corner.all()


def _matmul_hint(case: Case, mismatch: Mismatch, per_block: int) -> str:
    got, expected = mismatch.got, mismatch.expected
    if np.isnan(got).all():
        return (
            "nothing was written. Accumulate each dot product in a local variable and write "
            "`out[row, col] = acc` once, after the loop over the tiles."
        )
    if per_block == BLOCK_TILE and _only_part_of_each_block_written(mismatch, BLOCK_TILE, TILE):
        return (
            "only the top-left 8x8 corner of each 16x16 block tile was written: each thread must "
            "compute and write 2x2 outputs, rows ty and ty + 8, columns tx and tx + 8 of the "
            "block's tile (or another layout that covers all 16x16)."
        )
    if mismatch.unwritten.any():
        return (
            f"every output needs a thread that writes it: block (bx, by) covers rows "
            f"by*{per_block} to by*{per_block}+{per_block - 1} and the same range of columns."
        )
    a, b = case.inputs
    k = a.shape[1]
    full = (k // K_STEP) * K_STEP
    if 0 < full < k and np.allclose(got, a[:, :full] @ b[:full, :], rtol=1e-4, atol=case.atol):
        return (
            f"only the first {full} of K = {k} terms were summed: the loop over the tiles of K "
            f"must also take the last, partial tile (`for k0 in range(0, K, {K_STEP})`), with "
            "0.0 loaded where it hangs over the edge."
        )
    stale = _without_zero_fill(case)
    if stale is not None and np.allclose(got, stale, rtol=1e-4, atol=case.atol):
        return _ZERO_FILL_HINT.format(k=case.extra["k"], step=K_STEP)
    wrong = np.argwhere(mismatch.wrong)[0] if mismatch.wrong.any() else np.array([0, 0])
    return (  # no pattern recognised: say what is wrong, and what the kernel must compute
        f"out[{wrong[0]}, {wrong[1]}] should be the dot product of row {wrong[0]} of a and column "
        f"{wrong[1]} of b, {expected[tuple(wrong)]:.6g}. Check the tile loads (a_tile[ty, tx] = "
        "a[row, k0 + tx], b_tile[ty, tx] = b[k0 + ty, col]), the product in the inner loop "
        "(`acc += a_tile[ty, k] * b_tile[k, tx]`) and the two cuda.syncthreads() of each step."
    )


def _without_zero_fill(case: Case) -> np.ndarray | None:
    """What a kernel computes that skips the loads past the end of K instead of loading 0.0:
    in the last, partial step the tiles keep the previous step's values there, so the products
    of those K positions are added once more. None when K leaves no previous step to tell by."""
    a, b = (v.astype(np.float64) for v in case.inputs)
    k = a.shape[1]
    rest = k % K_STEP
    full = k - rest
    if rest == 0 or full < K_STEP:
        return None
    stale = slice(full - K_STEP + rest, full)
    return a @ b + a[:, stale] @ b[stale, :]


def _matmul_error_hint(case: Case, error: str) -> str:
    if getattr(error, "kind", "out_of_bounds") not in ("out_of_bounds", "extra_threads"):
        return ""
    if index_error_target(case, error) == "shared":
        return ""  # a tile too small for its index: the checker's own hint names the tile
    return _LOAD_GUARD_HINT


# --- matmul_tiled ------------------------------------------------------------------------------

TILED_TRACE_SHAPE = (16, 16, 16)  # M, K, N of the traced launch: 4 blocks, 2 steps


def _tiled_cases(rng: np.random.Generator) -> list[Case]:
    # one full tile; M and N past a multiple of 8 with K a multiple; then K past a multiple too
    shapes = ((8, 8, 8), (13, 16, 10), (6, 11, 9))
    return [_matmul_case(rng, m, k, n, TILE) for m, k, n in shapes]


_TILED_BANK_HINT = (
    "store each tile the way the matrix is laid out, `a_tile[ty, tx] = a[row, k0 + tx]` and "
    "`b_tile[ty, tx] = b[k0 + ty, col]`, and read `a_tile[ty, k]` and `b_tile[k, tx]`: "
    "consecutive threads (tx) then touch consecutive words, in different banks."
)

register(
    kernel_exercise(
        id="matmul_tiled",
        chapter=CHAPTER,
        title="Matrix product with shared-memory tiles",
        signature=(
            "matmul_tiled(a, b, out): a (M, K), b (K, N), out (M, N), float32; TILE = 8; "
            "each block computes an 8x8 tile of out, stepping along K with 8x8 tiles of a and b "
            "staged in shared memory"
        ),
        launch_text=(
            f"2-D: blocks of {TILE}x{TILE} threads, grid (ceil(N/{TILE}), ceil(M/{TILE})); "
            "x covers columns and y rows, so `col, row = cuda.grid(2)`"
        ),
        output_names=("out",),
        cases=_tiled_cases,
        hint=lambda case, mismatch: _matmul_hint(case, mismatch, TILE),
        error_hint=_matmul_error_hint,
        requirements=(
            _traffic_requirement(TILE, TILED_TRACE_SHAPE),
            no_bank_conflicts(hint=_TILED_BANK_HINT),
        ),
        trace_case=lambda rng: _matmul_case(rng, *TILED_TRACE_SHAPE, TILE),
    )
)


# --- matmul_register_tiled ----------------------------------------------------------------------

REGISTER_TRACE_SHAPE = (32, 16, 32)  # 4 blocks of 16x16 outputs, 2 steps


def _register_cases(rng: np.random.Generator) -> list[Case]:
    # one block tile and one K step; 2x2 block tiles with ragged M and N; a ragged K
    shapes = ((16, 8, 16), (20, 16, 18), (9, 13, 7))
    return [_matmul_case(rng, m, k, n, BLOCK_TILE) for m, k, n in shapes]


register(
    kernel_exercise(
        id="matmul_register_tiled",
        chapter=CHAPTER,
        title="Matrix product with register tiles: 2x2 outputs per thread",
        signature=(
            "matmul_register_tiled(a, b, out): a (M, K), b (K, N), out (M, N), float32; each "
            "block of 8x8 threads computes a 16x16 tile of out, each thread a 2x2 block of it, "
            "stepping along K by 8 with a 16x8 tile of a and an 8x16 tile of b in shared memory"
        ),
        launch_text=(
            f"2-D: blocks of {TILE}x{TILE} threads, grid (ceil(N/{BLOCK_TILE}), "
            f"ceil(M/{BLOCK_TILE})); block (bx, by) owns rows by*16 .. by*16+15 and columns "
            "bx*16 .. bx*16+15"
        ),
        output_names=("out",),
        cases=_register_cases,
        hint=lambda case, mismatch: _matmul_hint(case, mismatch, BLOCK_TILE),
        error_hint=_matmul_error_hint,
        requirements=(_traffic_requirement(BLOCK_TILE, REGISTER_TRACE_SHAPE),),
        trace_case=lambda rng: _matmul_case(rng, *REGISTER_TRACE_SHAPE, BLOCK_TILE),
    )
)


# --- matvec_warp ---------------------------------------------------------------------------------

MATVEC_THREADS = 64  # two warps per block: two rows per block


def _matvec_case(rng: np.random.Generator, rows: int, cols: int) -> Case:
    a, x = random_inputs(rng, (rows, cols), cols)
    return Case(
        label=f"a {rows}x{cols}",
        griddim=blocks_for(rows, MATVEC_THREADS // 32),
        blockdim=MATVEC_THREADS,
        inputs=(a, x),
        outputs=poisoned(rows),
        expected=((a.astype(np.float64) @ x).astype(np.float32),),
        rtol=1e-4,
        atol=1e-5 * cols,
    )


def _matvec_cases(rng: np.random.Generator) -> list[Case]:
    # one row per warp exactly; an odd number of rows longer than a warp; rows shorter than a warp
    return [_matvec_case(rng, r, c) for r, c in ((2, 32), (5, 70), (3, 10))]


def _matvec_hint(case: Case, mismatch: Mismatch) -> str:
    a, x = case.inputs
    got = mismatch.got.astype(np.float64)
    products = a.astype(np.float64) * x
    if np.allclose(got, products[:, :32].sum(axis=1), rtol=1e-4, atol=case.atol):
        return (
            "only the first 32 columns were summed: each lane adds columns lane, lane + 32, "
            "lane + 64, ... (`for j in range(lane, a.shape[1], 32):`) before the shuffles."
        )
    lane0 = products[:, ::32].sum(axis=1)
    if a.shape[1] > 1 and np.allclose(got, lane0, rtol=1e-4, atol=case.atol):
        return (
            "y[row] holds only lane 0's partial sum (columns 0, 32, 64, ...): add up the 32 "
            "lanes' partial sums with shuffles, `v += cuda.shfl_down_sync(0xFFFFFFFF, v, "
            "offset)` for offset = 16, 8, 4, 2, 1, before lane 0 writes."
        )
    lanes = np.zeros((a.shape[0], 32))  # each lane's partial sum
    for lane in range(min(32, a.shape[1])):
        lanes[:, lane] = products[:, lane::32].sum(axis=1)
    for steps in (1, 2, 3, 4):  # shfl_down with offsets 2**(steps-1), ..., 1: lanes 0..2**steps-1
        reached = 2**steps
        if a.shape[1] > reached and np.allclose(
            got, lanes[:, :reached].sum(axis=1), rtol=1e-4, atol=case.atol
        ):
            return (
                f"only lanes 0 to {reached - 1}'s partial sums reached lane 0: the shuffles need "
                "all five steps, offsets 16, 8, 4, 2 and 1."
            )
    if mismatch.unwritten.any():
        return (
            "each warp owns one row: row = blockIdx.x * 2 + threadIdx.x // 32; lane 0 of the "
            "warp writes y[row] (a warp whose row is past the end does nothing)."
        )
    row = int(np.argmax(mismatch.wrong)) if mismatch.wrong.any() else 0
    return (  # no pattern recognised: say what is wrong, and what the kernel must compute
        f"y[{row}] should be the dot product of row {row} of a with x, "
        f"{mismatch.expected[row]:.6g}. Each lane adds a[row, j] * x[j] for j = lane, lane + 32, "
        "...; then `v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)` for offset = 16, 8, 4, 2, "
        "1, with all 32 lanes taking part, leaves the row's sum in lane 0, which writes it."
    )


def _matvec_race_hint(race) -> str:
    if race.kind == "write-write":
        return (
            f"several lanes wrote {race.element}: exactly one thread per row writes the result, "
            "`if lane == 0: y[row] = v` (after the shuffles lane 0 holds the whole sum)."
        )
    return race_hint(race)


def _matvec_error_hint(case: Case, error: str) -> str:
    a, _ = case.inputs
    if getattr(error, "kind", "") == "warp":
        return (
            "all 32 lanes of the warp must reach every shuffle: do not return early from, or "
            "skip the shuffles in, lanes that have no column; such a lane keeps v = 0 and still "
            "takes part in the reduction (the `if` on the row is the same for the whole warp)."
        )
    if index_error_target(case, error) == "shared":
        return ""
    axis, size = getattr(error, "axis", None), getattr(error, "size", None)
    if axis == 0 and size == a.shape[0] and a.shape[0] != a.shape[1]:
        return (
            "a warp whose row is past the end (row >= a.shape[0]) must skip the row entirely: "
            "`if row < a.shape[0]:` around the whole row's work (the same for all 32 lanes)."
        )
    if size == a.shape[1]:
        return (
            "lanes loop over the row's columns with `for j in range(lane, a.shape[1], 32):`, "
            "so no lane reads past the end of the row."
        )
    return ""


register(
    kernel_exercise(
        id="matvec_warp",
        chapter=CHAPTER,
        title="Matrix-vector product, one warp per row",
        signature=(
            "matvec_warp(a, x, y): a (rows, cols), x (cols,), y (rows,), float32; y = a @ x. "
            "Warp w of the grid computes row w: its lanes read consecutive elements of the row, "
            "and shuffles add up their partial sums"
        ),
        launch_text=(
            f"1-D: {MATVEC_THREADS} threads (2 warps) per block, ceil(rows / 2) blocks; "
            "row = cuda.blockIdx.x * 2 + cuda.threadIdx.x // 32, lane = cuda.threadIdx.x % 32"
        ),
        output_names=("y",),
        cases=_matvec_cases,
        hint=_matvec_hint,
        error_hint=_matvec_error_hint,
        race_hint=_matvec_race_hint,
        requirements=(
            coalesced(
                stores=False,
                hint=(
                    "the 32 lanes of a warp should read 32 consecutive elements of ONE row "
                    "(a[row, j] with j = lane, lane + 32, ...). One thread per row makes a warp "
                    "read 32 different rows at once: 32 sectors per request."
                ),
            ),
        ),
        trace_case=lambda rng: _matvec_case(rng, 32, 32),  # 32 rows: a full warp of them
    )
)


# --- matmul_tiled_traffic ----------------------------------------------------------------------

TRAFFIC_N = 4096
TRAFFIC_TILE = 32


def _traffic_answer() -> NumericAnswer:
    n, tile, fp32 = TRAFFIC_N, TRAFFIC_TILE, 4
    return NumericAnswer(
        expected=2 * n**3 * fp32 / tile / 1e9,
        unit="GB",
        rel_tol=0.02,
        mistakes={
            2 * n**3 * fp32 / 1e9: (
                "that is the naive kernel's traffic (every product reads both operands from "
                "global memory). With tiles, each element brought into shared memory is used "
                f"by {tile} threads: divide by the tile width."
            ),
            2 * n**3 * fp32 / tile**2 / 1e9: (
                f"an element of a tile is reused {tile} times (once per row or column of the "
                f"tile), not {tile}x{tile} times."
            ),
            n**3 * fp32 / tile / 1e9: "count the tiles of both A and B: two loads per step.",
            2 * n**2 * fp32 / 1e9: (
                "that is the ideal, reading A and B exactly once. The tiled kernel rereads each "
                f"row panel of A once per block column: N / {tile} times."
            ),
            2 * n**3 * fp32 / tile: "the answer is in GB (1 GB = 1e9 bytes), not bytes.",
            2 * n**3 * 2 / tile / 1e9: "an fp32 element is 4 bytes.",
        },
        hint=(
            "per block and K-step: one tile of A and one of B, each "
            f"{tile}x{tile} fp32 values; there are (N/{tile})^2 blocks and N/{tile} steps."
        ),
    )


register(
    numeric_exercise(
        id="matmul_tiled_traffic",
        chapter=CHAPTER,
        title="Global-memory traffic of the tiled kernel",
        question=(
            f"A {TRAFFIC_N}x{TRAFFIC_N} by {TRAFFIC_N}x{TRAFFIC_N} fp32 matmul runs with "
            f"{TRAFFIC_TILE}x{TRAFFIC_TILE} shared-memory tiles. How many GB does the kernel "
            "load from global memory, counting every tile load and ignoring caches?"
        ),
        answer=_traffic_answer,
    )
)


# --- round_to_bf16 -----------------------------------------------------------------------------


def _bf16_inputs(rng: np.random.Generator) -> np.ndarray:
    """Values across fp32's range, exact ties (both parities), subnormals, the overflow edge."""
    spread = rng.standard_normal(2000) * 10.0 ** rng.uniform(-40, 38, 2000)
    kept = rng.integers(0x0080, 0x7F00, 64, dtype=np.uint32) << 16  # normal numbers, bf16 bits
    ties = (kept | 0x8000).view(np.float32)  # exactly halfway between two bf16 neighbours
    near = (kept | 0x7FFF).view(np.float32), (kept | 0x8001).view(np.float32)
    edges = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-40])
    with np.errstate(over="ignore"):
        spread = spread.astype(np.float32)
    values = np.concatenate([spread, ties, -ties, *near, edges.astype(np.float32)])
    return values.astype(np.float32)


def _bf16_hint(x: np.ndarray, got: np.ndarray) -> str:
    bits = x.view(np.uint32)
    truncated = (bits & 0xFFFF0000).view(np.float32)
    half_up = ((bits + 0x8000) & 0xFFFF0000).view(np.float32)
    with np.errstate(over="ignore"):
        fp16 = x.astype(np.float16).astype(np.float32)
    for candidate, hint in (
        (truncated, "you truncated (dropped the low 16 bits); round to the nearest instead."),
        (
            half_up,
            "exact ties must round to even: add 0x7FFF plus the lowest bit you keep "
            "((bits >> 16) & 1) before masking, not 0x8000.",
        ),
        (
            fp16,
            "that is fp16 (5 exponent bits). bf16 keeps fp32's 8 exponent bits and the top 7 "
            "fraction bits: the high 16 bits of the float32 pattern.",
        ),
    ):
        if _same(got, candidate):
            return hint
    return (
        "view the float32 array as uint32 (`x.view(np.uint32)`), add the rounding bias "
        "0x7FFF + ((bits >> 16) & 1), clear the low 16 bits with `& 0xFFFF0000`, and view the "
        "result as float32 again."
    )


def _same(got: np.ndarray, expected: np.ndarray) -> bool:
    return bool(np.all((got == expected) | (np.isnan(got) & np.isnan(expected))))


def _run_round_to_bf16(function) -> CheckResult:
    exercise_id = "round_to_bf16"
    if not callable(function):
        return failed(
            exercise_id,
            f"Expected a function, got {type(function).__name__}.",
            "pass the function itself: check('round_to_bf16', round_to_bf16).",
        )
    x = _bf16_inputs(np.random.default_rng())
    try:
        got = function(x.copy())
    except NotImplementedError:
        return not_attempted(exercise_id)
    except Exception as error:
        return failed(
            exercise_id,
            f"Your function raised {type(error).__name__}: {error}",
            "call it on a small array in a cell of its own to see the full error.",
        )
    if got is None:
        return failed(exercise_id, "Your function returned None.", _RETURN_HINT)
    try:
        with np.errstate(over="ignore"):
            got = np.asarray(got, dtype=np.float32)
    except (TypeError, ValueError, OverflowError):  # not numbers, or an int beyond any float
        return failed(
            exercise_id,
            f"Your function returned {type(got).__name__}, not a float32 array.",
            _RETURN_HINT,
        )
    if got.shape != x.shape:
        return failed(
            exercise_id, f"Your function returned shape {got.shape}, not {x.shape}.", _RETURN_HINT
        )
    expected = precision.round_to(x, "bf16").astype(np.float32)
    wrong = ~((got == expected) | (np.isnan(got) & np.isnan(expected)))
    if not wrong.any():
        return passed(exercise_id, f"All {x.size} values round exactly as a bf16 cast does.")
    i = int(np.argmax(wrong))
    what = (
        f"{int(wrong.sum())} of {x.size} values differ from a bf16 cast; the first is "
        f"x[{i}] = {x[i]!r} (bits 0x{x.view(np.uint32)[i]:08X}): yours {got[i]!r}, "
        f"expected {expected[i]!r}."
    )
    return failed(exercise_id, what, _bf16_hint(x, got))


_RETURN_HINT = "end the function with `return` and a float32 array of the same shape as x, holding the rounded values."

register(
    Exercise(
        id="round_to_bf16",
        chapter=CHAPTER,
        title="Round float32 to bfloat16 with bit operations",
        signature=(
            "round_to_bf16(x): x a float32 NumPy array; returns a float32 array of the same "
            "shape holding each value rounded to the nearest bf16 (ties to even)"
        ),
        launch="called once on a few thousand values, in the checker's own process",
        run=_run_round_to_bf16,
        kind="function",
    )
)
