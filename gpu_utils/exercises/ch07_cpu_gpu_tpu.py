"""Exercises of lab 07, CPU vs GPU vs TPU (chapter 07): one cycle of a systolic array, tiling a
large product onto a small array, and numbers (cycles, utilisation, ridge points)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..facts import processors
from ..one_gpu import systolic
from ._numeric import NumericAnswer, numeric_exercise
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register

CHAPTER = "07_cpu_gpu_tpu"


def _shift_right(x: np.ndarray, fill: np.ndarray | float) -> np.ndarray:
    out = np.empty_like(x)
    out[:, 0] = fill
    out[:, 1:] = x[:, :-1]
    return out


def _shift_down(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    out[1:] = x[:-1]
    return out


def _first_difference(got: np.ndarray, expected: np.ndarray, name: str) -> str:
    wrong = ~np.isclose(got, expected)
    i, j = (int(v) for v in np.argwhere(wrong)[0])
    return (
        f"{int(wrong.sum())} of {wrong.size} values of {name} are wrong; the first is "
        f"{name}[{i}, {j}]: yours {got[i, j]:.6g}, expected {expected[i, j]:.6g}."
    )


def _nonzero_ints(rng: np.random.Generator, shape) -> np.ndarray:
    """Small non-zero whole numbers as floats: every mistake changes some value, exactly."""
    return (rng.integers(1, 10, size=shape) * rng.choice([-1, 1], size=shape)).astype(float)


def _two_arrays(returned: object, shape: tuple[int, int]) -> tuple[tuple, str | None]:
    """The (acts, psums) a step returned, or what is wrong with them."""
    if not isinstance(returned, tuple) or len(returned) != 2:
        kind = type(returned).__name__
        return (), f"Your step returned {kind}, not a pair (new_acts, new_psums)."
    try:
        arrays = tuple(np.asarray(x, dtype=float) for x in returned)
    except (TypeError, ValueError) as error:
        return (), f"Your step returned something that is not an array of numbers ({error})."
    for name, array in zip(("new_acts", "new_psums"), arrays, strict=True):
        if array.shape != shape:
            return (), f"{name} has shape {array.shape}; it must have the array's shape {shape}."
    return arrays, None


# --- systolic_step ----------------------------------------------------------------------------

_STEP_RULE = (
    "each cell takes `left` (its left neighbour's activation, a_in[i] in column 0) and `above` "
    "(the partial sum of the cell above, 0 in row 0), then new_acts = left and "
    "new_psums = above + left * weights."
)


def _acts_hint(acts, a_in, got) -> str:
    if np.allclose(got, acts):
        return (
            "new_acts equals acts: the activations did not move. Each cycle an activation moves "
            "one cell to the right: new_acts[:, 1:] = acts[:, :-1] and new_acts[:, 0] = a_in."
        )
    if np.allclose(got, np.roll(acts, 1, axis=1)):
        return (
            "np.roll wraps around: column 0 received the last column's activations. Column 0 "
            "must receive a_in (new_acts[:, 0] = a_in)."
        )
    if np.allclose(got, _shift_right(acts, 0.0)):
        return "column 0 must receive the new activations: new_acts[:, 0] = a_in."
    if np.allclose(got[:, :-1], acts[:, 1:]):
        return "activations flow from left to right: cell (i, j) takes acts[i, j - 1]."
    if np.allclose(got, _shift_down(acts)) or np.allclose(got[1:], acts[:-1]):
        return (
            "activations move along a row (axis 1), from left to right; partial sums are the ones "
            "that move down."
        )
    return _STEP_RULE


def _psums_hint(weights, acts, psums, left, got) -> str:
    above = _shift_down(psums)
    candidates = (
        (
            psums + left * weights,
            "your partial sums stayed in their cells: each cycle they move down one row "
            "(above = psums[i - 1, j], 0 in row 0), so that column j adds up a[m, i] * w[i, j] "
            "over all rows i.",
        ),
        (
            np.roll(psums, 1, axis=0) + left * weights,
            "np.roll wraps around: row 0 received the bottom row's partial sums. Row 0 must "
            "start from 0 (above[0, :] = 0).",
        ),
        (
            above + acts * weights,
            "multiply the activation arriving this cycle (`left`, from the left neighbour), not "
            "the one the cell latched last cycle (acts[i, j]).",
        ),
        (left * weights, "add the partial sum coming from the cell above: above + left * weights."),
        (above + left, "multiply the activation by the cell's weight: above + left * weights."),
        (
            _shift_right(psums, 0.0) + left * weights,
            "partial sums flow down the columns (axis 0), not along the rows.",
        ),
        (
            np.vstack([psums[1:], np.zeros((1, psums.shape[1]))]) + left * weights,
            "partial sums flow down, from row i - 1 to row i, not up.",
        ),
    )
    for wrong, hint in candidates:
        if np.allclose(got, wrong):
            return hint
    return _STEP_RULE


def _check_one_cycle(function, rng, rows: int, cols: int) -> CheckResult | None:
    weights, acts, psums = (_nonzero_ints(rng, (rows, cols)) for _ in range(3))
    a_in = _nonzero_ints(rng, rows)
    expected_acts, expected_psums = systolic.step(weights, acts, psums, a_in)
    inputs = (weights.copy(), acts.copy(), psums.copy(), a_in.copy())
    try:
        returned = function(*inputs)
    except NotImplementedError:
        return not_attempted("systolic_step")
    except Exception as error:
        return failed(
            "systolic_step",
            f"On a {rows} x {cols} array your step raised {type(error).__name__}: {error}",
            "call it yourself on small arrays (the cell above the check builds some) to see "
            "the full error.",
        )
    arrays, problem = _two_arrays(returned, (rows, cols))
    if problem:
        return failed("systolic_step", problem, "end with `return new_acts, new_psums`.")
    got_acts, got_psums = arrays
    where = f"One cycle of a {rows} x {cols} array: "
    if not np.allclose(got_acts, expected_acts):
        what = where + _first_difference(got_acts, expected_acts, "new_acts")
        return failed("systolic_step", what, _acts_hint(acts, a_in, got_acts))
    if not np.allclose(got_psums, expected_psums):
        what = where + _first_difference(got_psums, expected_psums, "new_psums")
        return failed(
            "systolic_step", what, _psums_hint(weights, acts, psums, expected_acts, got_psums)
        )
    return None


def _check_step(function) -> CheckResult:
    if not callable(function):
        return failed(
            "systolic_step",
            f"Expected a function step(weights, acts, psums, a_in), got {type(function).__name__}.",
            "pass the function itself: check('systolic_step', step), not step(...).",
        )
    rng = np.random.default_rng()
    for rows, cols in ((3, 4), (4, 2), (1, 1)):
        problem = _check_one_cycle(function, rng, rows, cols)
        if problem is not None:
            return problem
    products = ((5, 7, 6, 3, 4), (4, 4, 4, 4, 4), (2, 9, 3, 2, 2))
    for m, k, n, rows, cols in products:
        a, b = rng.integers(-9, 10, (m, k)), rng.integers(-9, 10, (k, n))
        label = f"({m} x {k}) @ ({k} x {n}) on a {rows} x {cols} array"
        try:
            got = systolic.run(a, b, rows=rows, cols=cols, step=function).product
        except Exception as error:
            return failed(
                "systolic_step",
                f"Multiplying {label} with your step raised {type(error).__name__}: {error}",
                "your step must work for any array size and return new arrays each cycle.",
            )
        if not np.allclose(got, a @ b):
            return failed(
                "systolic_step",
                f"One cycle is right, but multiplying {label} with your step gives: "
                + _first_difference(got, (a @ b).astype(float), "c"),
                "a step must depend only on its arguments: no state kept between calls.",
            )
    shapes = "; ".join(f"{m}x{k} @ {k}x{n} on {r}x{c}" for m, k, n, r, c in products)
    return passed(
        "systolic_step",
        f"One cycle is right on 3x4, 4x2 and 1x1 arrays, and whole products match a @ b ({shapes}).",
    )


register(
    Exercise(
        id="systolic_step",
        chapter=CHAPTER,
        title="One clock cycle of a weight-stationary systolic array",
        signature=(
            "step(weights, acts, psums, a_in) -> (new_acts, new_psums): weights, acts, psums "
            "(rows, cols); a_in (rows,). Activations move one cell right, partial sums one cell "
            "down: new_acts = left, new_psums = above + left * weights"
        ),
        launch="called on random arrays, then by gu.systolic.run for whole products",
        run=_check_step,
        kind="function",
    )
)


# --- systolic_tiling --------------------------------------------------------------------------


class _TileShapeError(ValueError):
    """tile_product was given blocks that do not fit the array."""

    def __init__(self, a_shape, w_shape, m: int, rows: int, cols: int, b_shape) -> None:
        self.a_shape, self.w_shape = tuple(a_shape), tuple(w_shape)
        self.m, self.rows, self.cols, self.b_shape = m, rows, cols, tuple(b_shape)
        super().__init__(
            f"tile_product got a_block {self.a_shape} and w_tile {self.w_shape}; the "
            f"{rows} x {cols} array needs a_block ({m}, {rows}) and w_tile ({rows}, {cols})"
        )

    def hint(self) -> str:
        rows, cols = self.rows, self.cols
        w_rows, w_cols = self.w_shape if len(self.w_shape) == 2 else (-1, -1)
        if self.w_shape == self.b_shape and self.b_shape != (rows, cols):
            return (
                "you passed all of b: cut it into tiles of `rows` rows of K and `cols` columns "
                "of N, and call tile_product once per tile."
            )
        if rows != cols and self.w_shape == (cols, rows):
            return (
                "K is cut into chunks of `rows` (the array's height) and N into chunks of `cols`."
            )
        if w_rows > rows or w_cols > cols or (len(self.a_shape) == 2 and self.a_shape[1] > rows):
            return (
                f"a tile is larger than the array: step through K by rows ({rows}) and "
                f"through N by cols ({cols})."
            )
        if len(self.a_shape) == 2 and self.a_shape[0] != self.m:
            return f"a_block holds all M = {self.m} rows of a, and `rows` columns of it."
        return (
            "an edge tile is smaller than the array: pad it with zeros to the full size, e.g. "
            "w_tile = np.zeros((rows, cols)); w_tile[:depth, :width] = b[...], and pad the "
            "matching slice of a to (M, rows) the same way."
        )


_TILING_CASES = ((5, 7, 6, 3, 4), (4, 8, 8, 4, 4), (3, 2, 3, 4, 4), (6, 10, 9, 4, 3))


def _tiling_hint(a, b, rows, cols, got, calls: int) -> str:
    k = a.shape[1]
    n = b.shape[1]
    tiles = math.ceil(k / rows) * math.ceil(n / cols)
    last_k0 = (math.ceil(k / rows) - 1) * rows
    if np.allclose(got, a[:, last_k0:] @ b[last_k0:]):
        return (
            "only the last tile of K counts: the tiles along K each give a partial product of "
            "the same output columns, and these must be added (`out[...] += ...`), not assigned."
        )
    k_full, n_full = k - k % rows, n - n % cols
    only_full_tiles = np.zeros_like(got)
    only_full_tiles[:, :n_full] = a[:, :k_full] @ b[:k_full, :n_full]
    if (k_full < k or n_full < n) and np.allclose(got, only_full_tiles):
        return (
            "only whole tiles were multiplied: K needs ceil(K / rows) tiles and N ceil(N / cols); "
            "the last tile along each is partial, padded with zeros to the array's size."
        )
    if k_full < k and np.allclose(got, a[:, :k_full] @ b[:k_full]):
        return (
            f"the last {k - k_full} value(s) of K are missing: the number of tiles along K is "
            f"ceil(K / rows) = {math.ceil(k / rows)}, not K // rows = {k // rows}."
        )
    if n_full < n and np.allclose(got[:, :n_full], (a @ b)[:, :n_full]):
        return (
            f"the last {n - n_full} column(s) of the output are wrong: the number of tiles along "
            f"N is ceil(N / cols) = {math.ceil(n / cols)}, not N // cols = {n // cols}."
        )
    if calls != tiles:
        return (
            f"tile_product was called {calls} times; a ({k} x {n}) b on a {rows} x {cols} array "
            f"has ceil(K/rows) * ceil(N/cols) = {tiles} tiles, each multiplied once."
        )
    return (
        "the tile that covers rows k0:k0+rows of b and columns n0:n0+cols multiplies columns "
        "k0:k0+rows of a, and its result belongs in output columns n0:n0+cols."
    )


def _check_tiling_case(function, rng, case) -> CheckResult | None:
    m, k, n, rows, cols = case
    a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    calls = []

    def tile_product(a_block, w_tile):
        a_block, w_tile = np.asarray(a_block), np.asarray(w_tile)
        calls.append(1)
        if a_block.shape != (m, rows) or w_tile.shape != (rows, cols):
            raise _TileShapeError(a_block.shape, w_tile.shape, m, rows, cols, b.shape)
        return systolic.matmul_tile(a_block, w_tile)

    label = f"a {m} x {k}, b {k} x {n} on a {rows} x {cols} array"
    try:
        got = function(a.copy(), b.copy(), rows, cols, tile_product)
    except NotImplementedError:
        return not_attempted("systolic_tiling")
    except _TileShapeError as error:
        return failed("systolic_tiling", f"With {label}: {error}.", error.hint())
    except Exception as error:
        return failed(
            "systolic_tiling",
            f"With {label}, your function raised {type(error).__name__}: {error}",
            "run it yourself on the example above the check cell to see the full error.",
        )
    if got is None:
        return failed(
            "systolic_tiling", f"With {label}, your function returned None.", "return the output."
        )
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return failed(
            "systolic_tiling",
            f"With {label}, your function returned {type(got).__name__}, not an array of numbers.",
            "return the output matrix, a NumPy array of shape (M, N).",
        )
    expected = a @ b
    if got.shape != expected.shape:
        hint = "the output is (M, N), the shape of a @ b."
        if got.ndim == 2 and got.shape[0] == m and got.shape[1] > n:
            hint = f"cut the zero padding off the output: return out[:, :{n}], shape (M, N)."
        return failed(
            "systolic_tiling",
            f"With {label}, your output has shape {got.shape}; a @ b has shape {expected.shape}.",
            hint,
        )
    if not np.allclose(got, expected, rtol=1e-9, atol=1e-9):
        return failed(
            "systolic_tiling",
            f"With {label}: " + _first_difference(got, expected, "out"),
            _tiling_hint(a, b, rows, cols, got, len(calls)),
        )
    return None


def _check_tiling(function) -> CheckResult:
    if not callable(function):
        return failed(
            "systolic_tiling",
            f"Expected a function tile_matmul(a, b, rows, cols, tile_product), got "
            f"{type(function).__name__}.",
            "pass the function itself, not its result.",
        )
    rng = np.random.default_rng()
    for case in _TILING_CASES:
        problem = _check_tiling_case(function, rng, case)
        if problem is not None:
            return problem
    labels = "; ".join(f"{m}x{k} @ {k}x{n} on {r}x{c}" for m, k, n, r, c in _TILING_CASES)
    return passed("systolic_tiling", f"Correct on {len(_TILING_CASES)} products ({labels}).")


register(
    Exercise(
        id="systolic_tiling",
        chapter=CHAPTER,
        title="Tile a large matrix product onto a small systolic array",
        signature=(
            "tile_matmul(a, b, rows, cols, tile_product) -> (M, N) array equal to a @ b; "
            "tile_product(a_block (M, rows), w_tile (rows, cols)) -> (M, cols) is one pass "
            "through the array; edge tiles are zero-padded to full size"
        ),
        launch="called with the checker's own tile_product (the simulated array), 4 shapes",
        run=_check_tiling,
        kind="function",
    )
)


# --- numbers ----------------------------------------------------------------------------------


CYCLES_ARRAY = (8, 8)  # rows, cols
CYCLES_M = 20


def _cycles_answer() -> NumericAnswer:
    rows, cols = CYCLES_ARRAY
    m = CYCLES_M
    expected = systolic.cycles(m, rows, cols, rows, cols)  # rows + (rows - 1) + m + (cols - 1)
    return NumericAnswer(
        expected=expected,
        unit="cycles",
        rel_tol=0.01,
        mistakes={
            m: "that is only the streaming (M cycles). Add loading the weights (rows cycles), "
            "filling the skew (rows - 1) and draining the last column (cols - 1).",
            m + rows + cols - 2: "the weights must be in the cells before the first activation "
            "arrives: loading them takes `rows` cycles (one row of the tile per cycle).",
            rows + m + rows + cols: "fill takes rows - 1 cycles and drain cols - 1: the first "
            "row's activation is multiplied in the very cycle it enters.",
            m + rows + cols: "load the weights (rows cycles) first; fill is rows - 1 cycles and "
            "drain cols - 1.",
            rows + m: "after the weights are loaded and the rows streamed in, the skew still has "
            "to fill (rows - 1) and the last column to drain (cols - 1).",
        },
        hint="cycles = rows (load) + (rows - 1) (fill) + M (stream) + (cols - 1) (drain).",
    )


register(
    numeric_exercise(
        id="systolic_cycles_one_tile",
        chapter=CHAPTER,
        title="Cycles for one weight tile, from load to drain",
        question=(
            f"An {CYCLES_ARRAY[0]} x {CYCLES_ARRAY[1]} weight-stationary array multiplies a "
            f"({CYCLES_M}, {CYCLES_ARRAY[0]}) activation matrix by one ({CYCLES_ARRAY[0]}, "
            f"{CYCLES_ARRAY[1]}) weight tile, starting with the weights in memory. How many "
            "cycles until the last result leaves the array?"
        ),
        answer=_cycles_answer,
    )
)


def _utilisation_answer() -> NumericAnswer:
    rows, cols = processors.get("TPU-v1").mxu_shape
    m = 8
    return NumericAnswer(
        expected=m / max(m, rows),
        rel_tol=0.01,
        mistakes={
            100 * m / max(m, rows): "return a fraction between 0 and 1, not a percentage.",
            1.0: "the cells are not busy all the time: a new tile can start only every "
            "max(M, rows) cycles (its weights take `rows` cycles to load), and each tile keeps a "
            "cell busy for only M of those cycles.",
            m / (m + 2 * rows + cols - 2): "that is the sequential schedule, one tile at a time. "
            "Pipelined, fill and drain overlap with the neighbouring tiles; what is left is the "
            "wait for the next weights: a tile starts every max(M, rows) cycles.",
            m / (m + rows + cols - 2): "fill and drain overlap with the neighbouring tiles in the "
            "pipelined schedule; a tile starts every max(M, rows) cycles.",
            m / (rows * cols): "utilisation is busy cell-cycles / (cells x cycles): every cell is "
            "busy M cycles out of each max(M, rows).",
        },
        hint="in steady state a tile starts every max(M, rows) cycles and keeps every cell busy "
        "for M of them.",
    )


register(
    numeric_exercise(
        id="systolic_utilisation_batch8",
        chapter=CHAPTER,
        title="Utilisation of the TPU v1 matrix unit at batch 8",
        question=(
            "TPU v1's 256 x 256 array runs a layer of many weight tiles with only M = 8 rows of "
            "activations (batch 8), pipelined. In steady state, what fraction of its "
            "multiply-accumulate slots do useful work?"
        ),
        answer=_utilisation_answer,
    )
)


def _ridge_answer(name: str, dtype: str, mistakes: Callable[[object], dict]) -> NumericAnswer:
    spec = processors.get(name)
    peak, bandwidth = spec.peak_flops(dtype), spec.memory_bandwidth
    return NumericAnswer(
        expected=peak / bandwidth,
        unit="FLOP/byte",
        rel_tol=0.01,
        mistakes={
            bandwidth / peak: "the ridge point is FLOP per byte: peak FLOP/s divided by bytes/s.",
            peak / (8 * bandwidth): "bandwidth is already in bytes per second; no factor of 8.",
            **mistakes(spec),
        },
        hint="ridge point = peak FLOP/s / memory bandwidth in bytes/s (gu.processors has both).",
    )


def _v5e_mistakes(spec) -> dict:
    return {
        spec.int8_ops / spec.memory_bandwidth: "use the bf16 peak (197 TFLOP/s), not int8.",
        spec.bf16_flops / (800 * 2**30): "use 819 GB/s = 819e9 bytes/s, as gu.processors has it.",
    }


def _xeon_mistakes(spec) -> dict:
    per_core = spec.fp32_flops / spec.cores
    return {
        per_core / spec.memory_bandwidth: f"the peak is for the whole socket: all {spec.cores} "
        "cores share the memory bandwidth.",
        spec.bf16_flops / spec.memory_bandwidth: "this asks for the FP32 vector (AVX-512) peak, "
        "not the bf16 matrix units (AMX).",
        spec.fp32_flops / 2 / spec.memory_bandwidth: "count both FMA units per core and 2 FLOP "
        "per FMA: 56 x 2.0 GHz x 2 x 16 x 2 = 7.168 TFLOP/s.",
        spec.fp32_flops / (spec.memory_bandwidth / spec.memory_channels): "all 8 memory channels "
        "work at once: 8 x 4800e6 x 8 bytes = 307.2 GB/s.",
    }


register(
    numeric_exercise(
        id="ridge_point_tpu_v5e",
        chapter=CHAPTER,
        title="Ridge point of a TPU v5e chip (bf16)",
        question=(
            "What is the ridge point of one TPU v5e chip for bf16 matrix work, in FLOP per byte "
            "of HBM traffic?"
        ),
        answer=lambda: _ridge_answer("TPU-v5e", "bf16", _v5e_mistakes),
    )
)

register(
    numeric_exercise(
        id="ridge_point_xeon_fp32",
        chapter=CHAPTER,
        title="Ridge point of a Xeon Platinum 8480+ socket (FP32 vectors)",
        question=(
            "What is the ridge point of one Xeon Platinum 8480+ socket for FP32 AVX-512 work, in "
            "FLOP per byte of DRAM traffic?"
        ),
        answer=lambda: _ridge_answer("Xeon-8480+", "fp32", _xeon_mistakes),
    )
)
