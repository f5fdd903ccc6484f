"""A cycle-level model of a weight-stationary systolic array, the TPU's matrix unit (chapter 07).

The array is a grid of ``rows x cols`` multiply-accumulate cells. Each cell holds one weight,
loaded before the computation and kept there ("weight stationary"). Every clock cycle each cell

* takes an activation from its left neighbour (row ``i`` of the left edge is fed from outside),
* takes a partial sum from the cell above (the top row gets 0),
* adds activation x weight to the partial sum and passes it down, and passes the activation right.

Row ``m`` of the activations enters row ``i`` of the array ``m + i`` cycles after streaming
starts (the diagonal skew), so that it meets, at cell ``(i, j)``, the partial sum of the same row
``m`` coming down column ``j``. The bottom of column ``j`` then emits ``sum_i a[m, i] * w[i, j]``,
one element of ``a @ w``. This is the design of the TPU's matrix unit: Jouppi et al.,
"In-Datacenter Performance Analysis of a Tensor Processing Unit", ISCA 2017 (Section 2, Figure 4:
a 256 x 256 array, data flowing in from the left, partial sums flowing down, weights preloaded
and double-buffered).

A product larger than the array is split into weight tiles of ``rows x cols`` (:func:`tile_matmul`
shows the tiling on its own). The cycle count of :func:`run` follows from the schedule
(derived in the notebook and checked by the tests against the simulation):

* loading one weight tile takes ``rows`` cycles, one row per cycle (TPU v1 takes 256 cycles to
  shift a tile into its 256-row array);
* one tile of ``M`` activation rows takes ``(rows - 1)`` cycles to fill the skew, ``M`` cycles to
  stream and ``(cols - 1)`` cycles to drain the last column;
* ``"pipelined"`` (the TPU's way): the next tile's weights are loaded into a second buffer while
  the current tile streams, and the switch to them travels through the array with the first
  activations of the new tile, so a new tile starts every ``max(M, rows)`` cycles;
* ``"sequential"``: each tile is loaded, filled, streamed and drained before the next one starts.

    cycles = rows + (T - 1) * period + (M + rows + cols - 2)
    period = max(M, rows)                    (pipelined)
    period = M + 2 * rows + cols - 2         (sequential: then cycles = T * period)

with ``T = ceil(K / rows) * ceil(N / cols)`` tiles. Utilisation is the fraction of the array's
multiply-accumulate slots that did useful work: ``M * K * N / (rows * cols * cycles)``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "SCHEDULES",
    "Frame",
    "SystolicResult",
    "animate",
    "cycles",
    "matmul_tile",
    "output_stationary",
    "run",
    "step",
    "tile_matmul",
]

SCHEDULES = ("pipelined", "sequential")

#: Largest array the simulator accepts (the TPU v1 matrix unit is 256 x 256).
MAX_SIDE = 512
#: Largest rows x cols x cycles a run may simulate (a few seconds of NumPy).
MAX_CELL_UPDATES = 50_000_000

StepFunction = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple]


# --- one clock cycle --------------------------------------------------------------------------


def step(
    weights: np.ndarray, acts: np.ndarray, psums: np.ndarray, a_in: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Advance the array by one clock cycle; return the new ``(acts, psums)`` registers.

    ``weights``, ``acts`` and ``psums`` are ``(rows, cols)`` arrays: the weight each cell holds,
    and the activation and partial sum each cell latched in the previous cycle. ``a_in`` is the
    ``(rows,)`` column of activations entering the left edge this cycle. In one cycle, cell
    ``(i, j)`` receives ``left`` = ``acts[i, j - 1]`` (``a_in[i]`` when ``j == 0``) and ``above``
    = ``psums[i - 1, j]`` (0 when ``i == 0``), and latches::

        new_acts[i, j]  = left
        new_psums[i, j] = above + left * weights[i, j]

    Every cell updates at once, from the values of the previous cycle (registers, not a loop
    that reads what it has just written). The inputs are not modified. The bottom row of
    ``new_psums`` holds the dot products leaving the array this cycle.
    """
    left = np.empty_like(acts)
    left[:, 0] = a_in
    left[:, 1:] = acts[:, :-1]
    above = np.zeros_like(psums)
    above[1:, :] = psums[:-1, :]
    return left, above + left * weights


# --- tiling ----------------------------------------------------------------------------------


def tile_matmul(
    a: np.ndarray,
    b: np.ndarray,
    rows: int,
    cols: int,
    tile_product: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """``a @ b`` computed one ``rows x cols`` weight tile at a time.

    ``b`` (K, N) is cut into tiles of ``rows`` of K by ``cols`` of N; edge tiles are padded with
    zeros to the full array size, as are the matching ``rows``-wide slices of ``a`` (M, K).
    ``tile_product(a_block, w_tile)`` multiplies an ``(M, rows)`` block by a ``(rows, cols)``
    tile (one pass through the array); the partial products of tiles that share output columns
    are summed, which is what the TPU's accumulators do.
    """
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), dtype=np.result_type(a, b))
    for n0 in range(0, n, cols):
        width = min(cols, n - n0)
        for k0 in range(0, k, rows):
            depth = min(rows, k - k0)
            w_tile = np.zeros((rows, cols), dtype=b.dtype)
            w_tile[:depth, :width] = b[k0 : k0 + depth, n0 : n0 + width]
            a_block = np.zeros((m, rows), dtype=a.dtype)
            a_block[:, :depth] = a[:, k0 : k0 + depth]
            out[:, n0 : n0 + width] += tile_product(a_block, w_tile)[:, :width]
    return out


# --- the schedule in closed form ----------------------------------------------------------------


def _period(m: int, rows: int, cols: int, schedule: str) -> int:
    """Cycles between the starts of two consecutive tiles."""
    if schedule == "pipelined":
        return max(m, rows)
    return m + 2 * rows + cols - 2


def cycles(m: int, k: int, n: int, rows: int, cols: int, schedule: str = "pipelined") -> int:
    """Clock cycles :func:`run` takes for an (m, k) @ (k, n) product (formula in the docstring)."""
    for name, value in (("m", m), ("k", k), ("n", n), ("rows", rows), ("cols", cols)):
        _check_positive_int(name, value)
    _check_schedule(schedule)
    tiles = math.ceil(k / rows) * math.ceil(n / cols)
    return rows + (tiles - 1) * _period(m, rows, cols, schedule) + m + rows + cols - 2


# --- the simulation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """The array after one clock cycle (recorded by ``run(..., record=True)``)."""

    cycle: int
    a_in: np.ndarray  # (rows,) activations that entered the left edge this cycle
    fed: np.ndarray  # (rows,) True where a_in carried a real activation (not a bubble)
    weights: np.ndarray  # (rows, cols) weight each cell used this cycle
    acts: np.ndarray  # (rows, cols) activation each cell latched
    psums: np.ndarray  # (rows, cols) partial sum each cell latched
    active: np.ndarray  # (rows, cols) True where the cell did a useful multiply-add
    emitted: tuple[tuple[int, int, float], ...]  # (row, col, value) of outputs finished this cycle


@dataclass(frozen=True)
class SystolicResult:
    """The product and what it cost on the simulated array."""

    product: np.ndarray
    rows: int
    cols: int
    schedule: str
    shape: tuple[int, int, int]  # (M, K, N)
    tiles: int
    cycles: int
    activation_words: int  # values fed into the left edge (padding included)
    weight_words: int  # values loaded into the cells (padding included)
    accumulator_updates: int  # partial results added into the accumulators below the array
    frames: tuple[Frame, ...] | None = field(default=None, repr=False)

    @property
    def macs(self) -> int:
        """Useful multiply-accumulates: M * K * N."""
        m, k, n = self.shape
        return m * k * n

    @property
    def utilisation(self) -> float:
        """Fraction of the array's multiply-accumulate slots (rows * cols per cycle) used."""
        return self.macs / (self.rows * self.cols * self.cycles)

    def __str__(self) -> str:
        m, k, n = self.shape
        return (
            f"({m} x {k}) @ ({k} x {n}) on a {self.rows} x {self.cols} array, {self.schedule}: "
            f"{self.tiles} weight tile{'s' if self.tiles != 1 else ''}, {self.cycles:,} cycles, "
            f"utilisation {self.utilisation:.1%}"
        )

    __repr__ = __str__


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive whole number, got {value!r}")


def _check_schedule(schedule: str) -> None:
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule={schedule!r}: use one of {', '.join(map(repr, SCHEDULES))}")


def _as_matrix(name: str, value: object) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got an array of shape {array.shape}")
    if array.dtype == bool or not np.issubdtype(array.dtype, np.number):
        raise ValueError(f"{name} must hold real numbers, got dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.complexfloating):
        raise ValueError(f"{name} must hold real numbers, got dtype {array.dtype}")
    if 0 in array.shape:
        raise ValueError(f"{name} has shape {array.shape}: every dimension must be at least 1")
    return array


def _validate(a, b, rows, cols, schedule) -> tuple[np.ndarray, np.ndarray]:
    a, b = _as_matrix("a", a), _as_matrix("b", b)
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"a is {a.shape[0]} x {a.shape[1]} and b is {b.shape[0]} x {b.shape[1]}: the inner "
            "sizes must match (a.shape[1] == b.shape[0]), as for a @ b"
        )
    _check_positive_int("rows", rows)
    _check_positive_int("cols", cols)
    if rows > MAX_SIDE or cols > MAX_SIDE:
        raise ValueError(
            f"a {rows} x {cols} array is larger than this simulator allows ({MAX_SIDE} per side; "
            "the TPU v1 matrix unit is 256 x 256)"
        )
    _check_schedule(schedule)
    total = cycles(a.shape[0], a.shape[1], b.shape[1], rows, cols, schedule)
    if total * rows * cols > MAX_CELL_UPDATES:
        raise ValueError(
            f"simulating {total:,} cycles of a {rows} x {cols} array is too slow in Python; use "
            "smaller matrices or a smaller array, or gu.systolic.cycles(...) for the count alone"
        )
    dtype = np.int64 if np.issubdtype(np.result_type(a, b), np.integer) else np.float64
    return a.astype(dtype), b.astype(dtype)


def _weight_tiles(b: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """(T, rows, cols) zero-padded weight tiles, N-tile by N-tile, and each tile's (k, n) index."""
    k, n = b.shape
    k_tiles, n_tiles = math.ceil(k / rows), math.ceil(n / cols)
    padded = np.zeros((k_tiles * rows, n_tiles * cols), dtype=b.dtype)
    padded[:k, :n] = b
    grid = padded.reshape(k_tiles, rows, n_tiles, cols).transpose(2, 0, 1, 3)
    index = np.stack(np.meshgrid(np.arange(n_tiles), np.arange(k_tiles), indexing="ij"), axis=-1)
    return grid.reshape(-1, rows, cols), index.reshape(-1, 2)[:, ::-1]  # (k_tile, n_tile)


def _call_step(step_fn: StepFunction, weights, acts, psums, a_in) -> tuple[np.ndarray, np.ndarray]:
    returned = step_fn(weights, acts, psums, a_in)
    if not isinstance(returned, tuple) or len(returned) != 2:
        raise TypeError(
            f"step must return a tuple (acts, psums), got {type(returned).__name__}; "
            "end it with `return new_acts, new_psums`"
        )
    try:  # registers keep the run's dtype (int64 or float64), whatever the step computed in
        new_acts, new_psums = (np.asarray(x).astype(acts.dtype) for x in returned)
    except (TypeError, ValueError) as error:
        raise TypeError(f"step must return two arrays of numbers ({error})") from None
    if new_acts.shape != acts.shape or new_psums.shape != psums.shape:
        raise ValueError(
            f"step returned arrays of shapes {new_acts.shape} and {new_psums.shape}; both must "
            f"have the array's shape {acts.shape}"
        )
    return new_acts, new_psums


def run(
    a,
    b,
    *,
    rows: int,
    cols: int,
    schedule: str = "pipelined",
    step: StepFunction = step,
    record: bool = False,
) -> SystolicResult:
    """Multiply ``a @ b`` on a simulated ``rows x cols`` weight-stationary systolic array.

    ``a`` (M, K) holds the activations, streamed in from the left; ``b`` (K, N) the weights,
    loaded into the cells tile by tile. Integer inputs are computed exactly (as TPU v1 did with
    8-bit operands and 32-bit accumulators), others in float64. ``step`` is the per-cycle update
    (:func:`step` by default; the lab swaps in yours). ``record=True`` keeps a :class:`Frame` per
    cycle, for animations of small cases.
    """
    a, b = _validate(a, b, rows, cols, schedule)
    m, k = a.shape
    n = b.shape[1]
    w_tiles, tile_index = _weight_tiles(b, rows, cols)
    n_tiles_total = len(w_tiles)
    k_tiles = math.ceil(k / rows)
    a_padded = np.zeros((m, k_tiles * rows), dtype=a.dtype)
    a_padded[:, :k] = a
    out = np.zeros((m, math.ceil(n / cols) * cols), dtype=a.dtype)
    period = _period(m, rows, cols, schedule)
    total = cycles(m, k, n, rows, cols, schedule)

    row_ids, col_ids = np.arange(rows), np.arange(cols)
    depth_of_cell = row_ids[:, None] + col_ids[None, :]  # how many cycles the skew delays a cell
    acts = np.zeros((rows, cols), dtype=a.dtype)
    psums = np.zeros((rows, cols), dtype=a.dtype)
    frames: list[Frame] = []

    def locate(offset: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For cycles since the first stream began: (tile, activation row, valid?)."""
        tile = np.floor_divide(offset, period)
        row = offset - tile * period
        return tile, row, (offset >= 0) & (tile < n_tiles_total) & (row < m)

    for t in range(total):
        # Activations entering the left edge: row i gets activation row m of tile s at
        # cycle rows + s * period + m + i (the first `rows` cycles load the first weight tile).
        tile, a_row, fed = locate(t - rows - row_ids)
        a_in = np.zeros(rows, dtype=a.dtype)
        k_cols = tile_index[np.clip(tile, 0, n_tiles_total - 1), 0] * rows + row_ids
        a_in[fed] = a_padded[a_row[fed], k_cols[fed]]
        # A cell switches to the next tile's weights when that tile's first activation reaches it.
        cell_tile, _, in_stream = locate(t - rows - depth_of_cell)
        cell_tile = np.clip(cell_tile, 0, n_tiles_total - 1)
        weights = w_tiles[cell_tile, row_ids[:, None], col_ids]

        acts, psums = _call_step(step, weights, acts, psums, a_in)

        # The bottom of column j finishes row m of tile s at cycle rows + s*period + m + rows-1 + j.
        tile, out_row, done = locate(t - rows - (rows - 1) - col_ids)
        out_cols = tile_index[np.clip(tile, 0, n_tiles_total - 1), 1] * cols + col_ids
        out[out_row[done], out_cols[done]] += psums[rows - 1, done]

        if record:
            k_of_cell = tile_index[cell_tile, 0] * rows + row_ids[:, None]
            n_of_cell = tile_index[cell_tile, 1] * cols + col_ids
            emitted = tuple(
                (int(out_row[j]), int(out_cols[j]), psums[rows - 1, j].item())
                for j in range(cols)
                if done[j] and out_cols[j] < n
            )
            frames.append(
                Frame(
                    cycle=t,
                    a_in=a_in.copy(),
                    fed=fed.copy(),
                    weights=weights.copy(),
                    acts=acts.copy(),
                    psums=psums.copy(),
                    active=in_stream & (k_of_cell < k) & (n_of_cell < n),
                    emitted=emitted,
                )
            )

    return SystolicResult(
        product=out[:, :n],
        rows=rows,
        cols=cols,
        schedule=schedule,
        shape=(m, k, n),
        tiles=n_tiles_total,
        cycles=total,
        activation_words=n_tiles_total * m * rows,
        weight_words=n_tiles_total * rows * cols,
        accumulator_updates=n_tiles_total * m * cols,
        frames=tuple(frames) if record else None,
    )


def matmul_tile(a_block, w_tile, *, step: StepFunction = step) -> np.ndarray:
    """One pass through an array the size of ``w_tile``: ``a_block @ w_tile``, simulated.

    A ``tile_product`` for :func:`tile_matmul`: the array has ``w_tile.shape`` cells, so
    ``a_block`` must be ``(M, w_tile.shape[0])``.
    """
    w_tile = _as_matrix("w_tile", w_tile)
    rows, cols = w_tile.shape
    return run(a_block, w_tile, rows=rows, cols=cols, step=step).product


# --- animation ---------------------------------------------------------------------------------


def animate(a, b, *, rows: int, cols: int, interval: int = 1000, dpi: int = 56):
    """A matplotlib animation of one small product moving through the array, cycle by cycle.

    Display it with ``IPython.display.HTML(anim.to_jshtml())``. On the left, the activations wait
    in the skewed queue (row ``i`` starts ``i`` cycles late); each cell shows its weight ``w``,
    the activation it holds ``a`` and its partial sum ``p``, and is coloured when it did a useful
    multiply-add that cycle; finished outputs collect below their column. For one weight tile
    on an array of a few cells a side (the frames are images: keep it small).
    """
    import matplotlib.pyplot as plt
    from matplotlib import animation
    from matplotlib.patches import Rectangle

    a_matrix = _as_matrix("a", a)
    result = run(a, b, rows=rows, cols=cols, record=True)
    if result.tiles != 1 or rows * cols > 36 or result.shape[0] > 8:
        raise ValueError(
            "animate is for one weight tile on a small array: at most 36 cells, b at most "
            f"{rows} x {cols}, a at most 8 rows; use run(...) for larger cases"
        )
    m, k, _ = result.shape
    frames = result.frames[rows - 1 :]  # from the last weight-loading cycle on
    queue_width = m + rows - 1

    fig, ax = plt.subplots(
        figsize=(0.55 * queue_width + 1.2 * cols + 0.6, 1.0 * rows + 0.5 * m + 1.2), dpi=dpi
    )
    fig.subplots_adjust(left=0.01, right=0.99, top=0.9, bottom=0.01)
    ax.set_xlim(-0.55 * queue_width - 0.3, cols + 0.1)
    ax.set_ylim(rows + 0.5 * m + 0.5, -0.35)
    ax.set_axis_off()
    cells, labels = {}, {}
    for i in range(rows):
        for j in range(cols):
            cells[i, j] = ax.add_patch(Rectangle((j + 0.04, i + 0.04), 0.92, 0.92, ec="0.4"))
            labels[i, j] = ax.text(j + 0.5, i + 0.5, "", ha="center", va="center", fontsize=9)
    queue = [
        [ax.text(0, i + 0.5, "", ha="center", va="center", fontsize=10) for _ in range(m)]
        for i in range(rows)
    ]
    outputs = [
        [
            ax.text(j + 0.5, rows + 0.5 + 0.5 * r, "", ha="center", va="center", fontsize=9)
            for j in range(cols)
        ]
        for r in range(m)
    ]
    ax.text(-0.3, -0.05, "activations wait, skewed →", ha="right", va="bottom", fontsize=10)
    ax.text(cols / 2, rows + 0.05, "outputs leave the bottom ↓", ha="center", va="top", fontsize=9)
    title = ax.set_title("", fontsize=11)

    def draw(index: int):
        frame = frames[index]
        t = frame.cycle
        for i in range(rows):
            for r in range(m):
                wait = rows + r + i - t  # cycles until a[r, i] enters row i
                text = queue[i][r]
                text.set_text(f"{a_matrix[r, i]:g}" if i < k and wait > 0 else "")
                text.set_x(-0.55 * wait + 0.2)
            for j in range(cols):
                busy = frame.active[i, j]
                cells[i, j].set_facecolor("#9ecae1" if busy else "white")
                labels[i, j].set_text(
                    f"w={frame.weights[i, j]:g}\na={frame.acts[i, j]:g}\np={frame.psums[i, j]:g}"
                )
        for row in outputs:
            for text in row:
                text.set_text("")
        for earlier in frames[: index + 1]:
            for r, c, value in earlier.emitted:
                outputs[r][c].set_text(f"c[{r},{c}] = {value:g}")
        title.set_text(f"cycle {t} of {result.cycles - 1}: weights loaded in cycles 0-{rows - 1}")
        return []

    anim = animation.FuncAnimation(fig, draw, frames=len(frames), interval=interval, blit=False)
    plt.close(fig)
    return anim


def output_stationary(a, b) -> tuple[np.ndarray, int]:
    """``a @ b`` on an output-stationary array of ``M x N`` cells; returns (product, cycles).

    The other classic dataflow (Chen, Emer & Sze, "Eyeriss: a spatial architecture for
    energy-efficient dataflow for convolutional neural networks", ISCA 2016, Section IV, name the
    weight-, output- and row-stationary families): cell ``(i, j)`` keeps the partial sum of
    ``c[i, j]`` and never passes it on. Row ``i`` of ``a`` enters row ``i`` of the array from the
    left ``i`` cycles late, column ``j`` of ``b`` enters column ``j`` from the top ``j`` cycles
    late; every cycle each cell adds the product of what it holds, then passes ``a`` right and
    ``b`` down. The last product reaches cell ``(M-1, N-1)`` after ``K + M + N - 2`` cycles
    (reading the results out of the cells is not counted).
    """
    a, b = _as_matrix("a", a), _as_matrix("b", b)
    (m, k), (k_b, n) = a.shape, b.shape
    if k != k_b:
        raise ValueError(f"a is {m} x {k} and b is {k_b} x {n}: the inner sizes must agree")
    acc = np.zeros((m, n), dtype=np.result_type(a, b))
    a_reg, b_reg = np.zeros((m, n), dtype=a.dtype), np.zeros((m, n), dtype=b.dtype)
    total = k + m + n - 2
    for t in range(total):
        a_reg[:, 1:] = a_reg[:, :-1].copy()  # activations move one cell right
        b_reg[1:, :] = b_reg[:-1, :].copy()  # weights move one cell down
        for i in range(m):  # skewed inputs at the left edge: row i is i cycles late
            a_reg[i, 0] = a[i, t - i] if 0 <= t - i < k else 0
        for j in range(n):  # and at the top edge: column j is j cycles late
            b_reg[0, j] = b[t - j, j] if 0 <= t - j < k else 0
        acc += a_reg * b_reg  # every cell: one multiply-accumulate into its own output
    return acc, total
