"""Lab 12's ramp (Triton, chapter 12): two small steps between the masked vector add and the
softmax, after Triton-Puzzles (github.com/srush/Triton-Puzzles: puzzle 4, "Outer Vector Add
Block", and puzzle 7, "Long Sum"), checked like every lab 12 kernel (``_triton`` launches it on
fresh random tensors with NaN-poisoned outputs, stops and names an access outside the tensors,
then compiles a correct kernel for a GPU).

- ``triton_outer_add``: ``out[i, j] = x[i] + y[j]``, one program per ``BLOCK_M x BLOCK_N`` tile
  on a 2-D grid: ``tl.program_id(0)`` and ``tl.program_id(1)``, ``x[:, None] + y[None, :]``, a
  mask on both dimensions, ``out`` with a row stride of its own.
- ``triton_row_sum``: ``out[r] = sum(x[r, :])``, one program per row, a loop over the row in
  blocks of ``BLOCK_SIZE`` columns, float32 accumulation (one case has float16 input).

Every case list holds sizes 1, 2 and 3, sizes that are not powers of two nor multiples of the
block, and more than one block along each dimension a program walks or the grid covers: a loop
that rounds down (``n_cols // BLOCK_SIZE``, 0 for a short row) covers nothing there, and the
poisoned outputs show it (github.com/AlphaGPU/leetgpu-challenges issue #134: no test had N < 4,
so a grid of N / 4 = 0 blocks, which launched nothing, passed). Hints come from evidence: which
rows, columns, tiles or blocks are wrong or unwritten, and how the wrong values relate to the
right ones (``_evidence``), tried against what named mistakes would produce on the same inputs;
otherwise a general recipe with what was observed.
"""

from __future__ import annotations

import numpy as np

from . import _evidence as ev
from ._kernels import Mismatch
from ._registry import register
from ._triton import LaunchError, TritonCase, register_reducer, triton_exercise
from ._triton import cdiv as _cdiv
from ._triton import nan_tensor as _nan
from ._triton import observed_relation as _observed
from ._triton import tensor as _tensor

CHAPTER = "12_triton"

register_reducer()  # a compiled kernel (GPU mode) travels to the checker by its function


def _fits(
    got: np.ndarray, pattern: np.ndarray, where: np.ndarray, rtol: float, atol: float
) -> bool:
    """``got`` equals ``pattern`` on ``where`` (and ``where`` is not empty)."""
    where = where & np.isfinite(pattern)
    if not where.any():
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.allclose(got[where], pattern[where], rtol=rtol, atol=atol))


# --- triton_outer_add ---------------------------------------------------------------------------

OUTER_SIGNATURE = (
    "outer_add_kernel(x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, "
    "BLOCK_N: tl.constexpr)"
)
OUTER_CASES = (  # (M, N, BLOCK_M, BLOCK_N, out's row stride or None when contiguous)
    (37, 50, 16, 32, None),
    (1, 1, 16, 16, None),
    (2, 3, 16, 16, None),
    (3, 2, 2, 2, None),
    (40, 40, 16, 16, None),
    (20, 70, 8, 32, 80),
)
OUTER_LAUNCH = (
    "outer_add_kernel[(triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))](x, y, out, M, N, "
    "out.stride(0), BLOCK_M, BLOCK_N): program (pid_m, pid_n) writes the BLOCK_M x BLOCK_N tile "
    "of out[i, j] = x[i] + y[j] (x has M elements, y has N, float32) at rows pid_m * BLOCK_M "
    "... and columns pid_n * BLOCK_N ...; (M, N) with (BLOCK_M, BLOCK_N) = (37, 50) with "
    "(16, 32), (1, 1) and (2, 3) with (16, 16), (3, 2) with (2, 2), (40, 40) with (16, 16), and "
    "(20, 70) with (8, 32) where out is a view with row stride 80"
)


def _outer_cases(rng: np.random.Generator) -> list[TritonCase]:
    cases = []
    for m, n, bm, bn, stride in OUTER_CASES:
        x = rng.uniform(-1, 1, m).astype(np.float32)
        y = rng.uniform(-1, 1, n).astype(np.float32)
        label = f"M={m}, N={n}, BLOCK_M={bm}, BLOCK_N={bn}"
        if stride:
            out = _nan(m, stride)[:, :n]
            label += f", out a view with row stride {stride}"
        else:
            out = _nan(m, n)
        cases.append(
            TritonCase(
                label=label,
                grid=(_cdiv(m, bm), _cdiv(n, bn)),
                args={
                    "x_ptr": _tensor(x),
                    "y_ptr": _tensor(y),
                    "out_ptr": out,
                    "M": m,
                    "N": n,
                    "out_row_stride": stride or n,
                },
                outputs=("out_ptr",),
                expected={"out_ptr": _tensor(x[:, None] + y[None, :])},
                constexprs={"BLOCK_M": bm, "BLOCK_N": bn},
                extra={"x": x, "y": y, "blocks": (bm, bn), "strided": bool(stride)},
            )
        )
    return cases


def _within_tile_swap(x: np.ndarray, y: np.ndarray, bm: int, bn: int) -> np.ndarray:
    """What ``x[None, :] + y[:, None]`` stores in a square tile: out[m0 + a, n0 + b] =
    x[m0 + b] + y[n0 + a] (NaN where those indices fall outside x or y)."""
    rows, cols = np.indices((x.size, y.size))
    a, b = rows % bm, cols % bn
    xi, yj = rows - a + b, cols - b + a
    inside = (xi < x.size) & (yj < y.size)
    values = x[np.clip(xi, 0, x.size - 1)] + y[np.clip(yj, 0, y.size - 1)]
    return np.where(inside, values, np.nan)


def _tile_states(case: TritonCase, mismatch: Mismatch) -> dict[tuple[int, int], str]:
    """For each tile (row tile, column tile): "right", "unwritten", "wrong" or "mixed"."""
    bm, bn = case.extra["blocks"]
    gm, gn = case.grid
    states = {}
    for tr in range(gm):
        for tc in range(gn):
            window = (slice(tr * bm, (tr + 1) * bm), slice(tc * bn, (tc + 1) * bn))
            wrong, unwritten = mismatch.wrong[window], mismatch.unwritten[window]
            if not wrong.any() and not unwritten.any():
                states[tr, tc] = "right"
            elif unwritten.all():
                states[tr, tc] = "unwritten"
            elif wrong.all():
                states[tr, tc] = "wrong"
            else:
                states[tr, tc] = "mixed"
    return states


_TILE_RECIPE = (
    "Program (pid_m, pid_n) owns rows `offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)` and "
    "columns `offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)`, with `pid_m = "
    "tl.program_id(0)` and `pid_n = tl.program_id(1)`"
)


def _outer_hint(case: TritonCase, mismatch: Mismatch) -> str:
    x, y = case.extra["x"].astype(np.float64), case.extra["y"].astype(np.float64)
    got, want = mismatch.got, mismatch.expected
    bm, bn = case.extra["blocks"]
    gm, gn = case.grid
    m, n = want.shape
    written = ~mismatch.unwritten
    tol = {"rtol": 1e-4, "atol": 1e-5}

    # 1. the formula: the written values are what another formula gives
    formulas = (
        (x[:, None] * y[None, :], "your output is x[i] * y[j]: it should be `x[i] + y[j]`."),
        (x[:, None] - y[None, :], "your output is x[i] - y[j]: it should be `x[i] + y[j]`."),
        (
            np.broadcast_to(x[:, None], want.shape),
            "your output is x[i] alone: add y[j] too (`x[:, None] + y[None, :]`).",
        ),
        (
            np.broadcast_to(y[None, :], want.shape),
            "your output is y[j] alone: add x[i] too (`x[:, None] + y[None, :]`).",
        ),
    )
    wrong_written = mismatch.wrong.any()
    for pattern, text in formulas:
        if wrong_written and _fits(got, pattern, written, **tol):
            return text

    # 2. rows and columns exchanged: out[i, j] holds x[j] + y[i]
    swapped = (
        "out[i, j] holds x[j] + y[i]: rows and columns are exchanged. x goes down the rows "
        "(`x[:, None]`, loaded at `offs_m`, the rows of the tile) and y along the columns "
        "(`y[None, :]`, loaded at `offs_n`)"
    )
    if m == n and wrong_written and _fits(got, want.T, written, **tol):
        return swapped + "."
    if bm == bn and wrong_written and _fits(got, _within_tile_swap(x, y, bm, bn), written, **tol):
        return (
            swapped + " within each tile: `x[None, :] + y[:, None]` is the transposed tile; write "
            "`x[:, None] + y[None, :]`."
        )

    # 3. one block of x or of y used for every tile: a program offset left out of one load
    cols, rows = np.arange(n), np.arange(m)
    if wrong_written and gn > 1 and _fits(got, x[:, None] + y[None, cols % bn], written, **tol):
        return (
            f"every column tile holds y[0] to y[{bn - 1}] (the first BLOCK_N values of y): the "
            "load of y must use the tile's columns, `offs_n = pid_n * BLOCK_N + "
            "tl.arange(0, BLOCK_N)`."
        )
    if wrong_written and gm > 1 and _fits(got, x[rows % bm, None] + y[None, :], written, **tol):
        return (
            f"every row tile holds x[0] to x[{bm - 1}] (the first BLOCK_M values of x): the "
            "load of x must use the tile's rows, `offs_m = pid_m * BLOCK_M + "
            "tl.arange(0, BLOCK_M)`."
        )

    # 1b. each row one value of x (the same x for the whole row, not x[i]): the row's offset
    # from x[i] + y[j] is one constant per row, and that constant's x is another row's
    if wrong_written:
        offset = np.where(written, got - y[None, :], np.nan)
        with np.errstate(invalid="ignore"):
            per_row = np.nanmean(offset, axis=1)
        rows_ok = np.isfinite(per_row)
        flat = rows_ok & (np.nanmax(np.abs(offset - per_row[:, None]), axis=1, initial=0) < 1e-4)
        if flat[rows_ok].all() and rows_ok.sum() > 1:
            for r in np.flatnonzero(rows_ok):
                k = int(np.argmin(np.abs(x - per_row[r])))
                if k != r and abs(x[k] - per_row[r]) < 1e-4:
                    return (
                        f"each row of out is y plus one value of x, but not its own: row {r} "
                        f"holds x[{k}] + y[j], not x[{r}] + y[j]. x must be loaded as the tile's "
                        "vector of rows, `tl.load(x_ptr + offs_m, mask=offs_m < M)` with `offs_m "
                        "= pid_m * BLOCK_M + tl.arange(0, BLOCK_M)`, not as one value (at the "
                        "program's index)."
                    )

    # 4. which tiles were written: all the written values right, some tiles never written
    states = _tile_states(case, mismatch)
    right_or_missing = not wrong_written
    if right_or_missing and gm != gn:
        swapped_grid = {(r, c) for r in range(gm) for c in range(gn) if r < gn and c < gm}
        if {t for t, s in states.items() if s == "right"} == swapped_grid:
            return (
                f"only the tiles (row tile, column tile) with row tile < {gn} and column tile < "
                f"{gm} were written, and they are right: your program ids are exchanged. The "
                f"grid's axis 0 counts tiles of rows (cdiv(M, BLOCK_M) = {gm}) and axis 1 tiles "
                f"of columns (cdiv(N, BLOCK_N) = {gn}): `pid_m = tl.program_id(0)`, `pid_n = "
                "tl.program_id(1)`."
            )
    if right_or_missing and gm > 1 and gn > 1:
        right = {t for t, s in states.items() if s == "right"}
        diagonal = {(t, t) for t in range(min(gm, gn))}
        if right == diagonal:
            return (
                "only the tiles on the diagonal (row tile = column tile) were written, and "
                "they are right: pid_m and pid_n are the same number. " + _TILE_RECIPE + "."
            )
    if right_or_missing and (gm > 1 or gn > 1):
        done = [t for t, s in states.items() if s != "unwritten"]
        if {r for r, _ in done} == {0} and gm > 1:
            return (
                f"only rows 0 to {min(bm, m) - 1} (the first row tile) were written: every "
                "program wrote row tile 0. " + _TILE_RECIPE + "."
            )
        if {c for _, c in done} == {0} and gn > 1:
            return (
                f"only columns 0 to {min(bn, n) - 1} (the first column tile) were written: every "
                "program wrote column tile 0. " + _TILE_RECIPE + "."
            )

    # 5. the tails: the last row or column, or the last partial tile, never written or wrong
    bad = mismatch.wrong | mismatch.unwritten
    region = ev.find_region(got, want, wrong=bad)
    bad_rows, bad_cols = region.rows, region.columns
    what = "never written" if not wrong_written else "wrong"
    for along, bad_along, size, block, name, axis in (
        ("row", bad_cols, n, bn, "columns", "n"),
        ("column", bad_rows, m, bm, "rows", "m"),
    ):
        everywhere = region.all_rows if along == "row" else region.all_columns
        if not (everywhere and bad_along and min(bad_along) > 0):
            continue
        upper = axis.upper()
        block_name = f"BLOCK_{upper}"
        said = (
            f"in every {along}, {name} {ev.describe_indices(bad_along)} are {what} and the "
            f"others are right ({upper} = {size}, {block_name} = {block})"
        )
        tail = list(bad_along) == list(range(min(bad_along), size))
        if tail:
            return (
                f"{said}: the last {name} are left out. The {name}' mask must be "
                f"`offs_{axis} < {upper}`, and the tiles must cover every {name[:-1]}: "
                f"`offs_{axis} = pid_{axis} * {block_name} + tl.arange(0, {block_name})`."
            ) + _observed(case, mismatch)
        return (
            f"{said}: no tile covered them. The tiles of the grid must cover each of the "
            f"{name} once: `offs_{axis} = pid_{axis} * {block_name} + tl.arange(0, "
            f"{block_name})`, with the {name}' mask `offs_{axis} < {upper}`."
        ) + _observed(case, mismatch)

    if case.extra["strided"]:
        return (
            f"only the case where out is a view with row stride {case.args['out_row_stride']} "
            f"(N = {n}) is wrong; the contiguous cases were right: out[i, j] is at "
            "`out_ptr + i * out_row_stride + j`, not `i * N + j`."
        ) + _observed(case, mismatch)

    tile_rows = sorted({r // bm for r in bad_rows})
    tile_cols = sorted({c // bn for c in bad_cols})
    said = (
        f"rows {ev.describe_indices(bad_rows)} and columns {ev.describe_indices(bad_cols)} of "
        f"out are {what} (row tiles {ev.describe_indices(tile_rows)}, column tiles "
        f"{ev.describe_indices(tile_cols)} of BLOCK_M x BLOCK_N = {bm} x {bn})"
    )
    return (
        f"{said}. {_TILE_RECIPE}; it stores `x[:, None] + y[None, :]` at `out_ptr + "
        "offs_m[:, None] * out_row_stride + offs_n[None, :]` with the mask `(offs_m[:, None] < "
        "M) & (offs_n[None, :] < N)`."
    ) + _observed(case, mismatch)


def _outer_error(case: TritonCase, error: LaunchError) -> str:
    """A block-shape clash (``x[None, :] + y[:, None]`` on tiles that are not square, a pointer
    block of one shape stored with values of another): say which shapes the tile needs."""
    text = error.text.lower()
    if error.kind == "other" and ("broadcast" in text or "incompatible dimensions" in text):
        return (
            "the shapes of that line's blocks do not fit together. The tile is BLOCK_M x BLOCK_N: "
            "`x[:, None]` is a column (BLOCK_M x 1), `y[None, :]` a row (1 x BLOCK_N), and their "
            "sum, the pointers `out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]` "
            "and the mask are all BLOCK_M x BLOCK_N."
        )
    if error.kind == "out_of_bounds" and error.offsets and len(error.program) >= 2:
        # the offsets the transposed address, column x row stride + row, gives this program's
        # lanes inside M x N: the same set as those that fell outside out
        m, n, stride = case.args["M"], case.args["N"], case.args["out_row_stride"]
        bm, bn = case.extra["blocks"]
        rows = [i for i in range(error.program[0] * bm, (error.program[0] + 1) * bm) if i < m]
        cols = [j for j in range(error.program[1] * bn, (error.program[1] + 1) * bn) if j < n]
        swapped = {j * stride + i for i in rows for j in cols}
        outside = {o for o in swapped if o >= (m - 1) * stride + n}  # past out's last element
        if outside and outside == set(error.offsets):
            return (
                "the addresses that fell outside are exactly those of out[j, i] for this "
                "program's rows i and columns j: the store puts the column index on the row "
                "stride (the tile transposed). Row i of out is at `out_ptr + offs_m[:, None] * "
                "out_row_stride`, column j at `+ offs_n[None, :]`."
            )
    if error.kind == "out_of_bounds" and error.masked and not error.hint.startswith("those"):
        m, n = case.args["M"], case.args["N"]
        return (
            f"{error.hint} Here x has M = {m} elements, one per row of out (indexed by the "
            f"tile's rows `offs_m`), and y has N = {n}, one per column (indexed by `offs_n`)."
        )
    return ""


register(
    triton_exercise(
        id="triton_outer_add",
        chapter=CHAPTER,
        title="Outer add on a 2-D grid of tiles",
        signature=OUTER_SIGNATURE,
        launch_text=OUTER_LAUNCH,
        cases=_outer_cases,
        hint=_outer_hint,
        error_hint=_outer_error,
    )
)

# --- triton_row_sum -----------------------------------------------------------------------------

ROW_SUM_SIGNATURE = "row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr)"
ROW_SUM_CASES = (  # (rows, n_cols, BLOCK_SIZE, x's row stride or None, dtype)
    (5, 1000, 128, None, "float32"),
    (1, 1, 64, None, "float32"),
    (2, 3, 2, None, "float32"),
    (3, 2, 32, None, "float32"),
    (4, 256, 64, None, "float32"),
    (6, 300, 64, 320, "float32"),
    (3, 3000, 256, None, "float16"),
)
ROW_SUM_LAUNCH = (
    "row_sum_kernel[(n_rows,)](x, out, x.stride(0), n_cols, BLOCK_SIZE): one program per row "
    "writes out[row] = x[row, 0] + ... + x[row, n_cols - 1], reading the row BLOCK_SIZE columns "
    "at a time (most rows are longer than one block) and adding in float32; out is float32; "
    "(n_rows, n_cols, BLOCK_SIZE) = (5, 1000, 128), (1, 1, 64), (2, 3, 2), (3, 2, 32), "
    "(4, 256, 64), (6, 300, 64) with x a view with row stride 320, and (3, 3000, 256) with x "
    "float16"
)


def _row_sum_cases(rng: np.random.Generator) -> list[TritonCase]:
    cases = []
    for rows, cols, block, stride, dtype in ROW_SUM_CASES:
        width = stride or cols
        if dtype == "float16":
            base = rng.uniform(0, 1, (rows, width)).astype(np.float16)
        else:
            base = rng.uniform(-1, 1, (rows, width)).astype(np.float32)
        values = base[:, :cols]
        label = f"x {rows}x{cols}, BLOCK_SIZE={block}"
        if stride:
            label += f", x a view with row stride {stride}"
        if dtype == "float16":
            label += ", x float16"
        cases.append(
            TritonCase(
                label=label,
                grid=(rows,),
                args={
                    "x_ptr": _tensor(base)[:, :cols],
                    "out_ptr": _nan(rows),
                    "x_row_stride": width,
                    "n_cols": cols,
                },
                outputs=("out_ptr",),
                expected={
                    "out_ptr": _tensor(values.astype(np.float64).sum(axis=1).astype(np.float32))
                },
                constexprs={"BLOCK_SIZE": block},
                rtol=1e-5,
                atol=1e-5,
                extra={
                    "x": values.astype(np.float64),
                    "block": block,
                    "strided": bool(stride),
                    "dtype": dtype,
                },
            )
        )
    return cases


def _row_sum_candidates(case: TritonCase) -> list[tuple[np.ndarray, str]]:
    """What named mistakes give on this case's rows, each with its hint (most specific first)."""
    x, block = case.extra["x"], case.extra["block"]
    rows, cols = x.shape
    want = x.sum(axis=1)
    parts = np.stack([x[:, s : s + block].sum(axis=1) for s in range(0, cols, block)], axis=1)
    blocks = parts.shape[1]
    last = (blocks - 1) * block
    loop = (
        "`for start in range(0, n_cols, BLOCK_SIZE)` with `cols = start + tl.arange(0, BLOCK_SIZE)`"
    )
    found = []
    # per-lane partial sums (lane l adds columns l, l + BLOCK, ...), reduced at the end with
    # another reduction than tl.sum
    padded = np.zeros((rows, blocks * block), dtype=np.float64)
    padded[:, :cols] = x
    lanes = padded.reshape(rows, blocks, block).sum(axis=1)[:, : min(block, cols)]
    # (only lanes that hold a column: a padded lane's 0 would be every row's minimum)
    for reduce, name in ((np.max, "tl.max"), (np.min, "tl.min")) if lanes.shape[1] > 1 else ():
        found.append(
            (
                reduce(lanes, axis=1),
                f"each row sum is the {name[3:]} of the per-lane partial sums (lane l adds "
                f"columns l, l + {block}, ...): the lanes were reduced with `{name}` where "
                "their sum belongs, `tl.sum(acc, axis=0)`.",
            )
        )
    if blocks > 1:
        found += [
            (
                blocks * parts[:, 0],
                f"each row sum is {blocks} times the sum of its first {block} columns: every "
                f"iteration read the same, first block. The columns must move with the loop: "
                f"{loop}.",
            ),
            (
                parts[:, 0],
                f"each row sum is the sum of its first BLOCK_SIZE = {block} columns only, as if "
                f"the row were one block long (here {cols} columns, {blocks} blocks): loop over "
                f"every block of the row, {loop}, adding each into the accumulator.",
            ),
            (
                parts[:, -1],
                f"each row sum is the sum of its last block only (columns {last} to {cols - 1}): "
                "the accumulator starts again in every iteration: create it once, before the "
                "loop (an `acc = tl.zeros(...)` inside the loop resets it each block), and add "
                "each block into it, `acc += ...`.",
            ),
            (
                parts[:, :-1].sum(axis=1),
                f"each row sum leaves out its last block (columns {last} to {cols - 1}, "
                f"{cols - last} of them): the loop must cover every block, including the last"
                + (", partial one (masked with `cols < n_cols`)" if cols % block else "")
                + f": {loop}.",
            ),
            (
                parts[:, 1:].sum(axis=1),
                f"each row sum leaves out its first block (columns 0 to {block - 1}): the loop "
                f"must start at column 0, {loop}.",
            ),
        ]
    if cols > 1:
        found += [
            (
                want - x[:, -1],
                f"each row sum leaves out the last column ({cols - 1}): the mask must keep every "
                "column below n_cols, `cols < n_cols` (not `<= n_cols - 2` or `< n_cols - 1`).",
            ),
            (
                want / cols,
                f"your values are the row means (the sums divided by n_cols = {cols}): store the "
                "sum itself.",
            ),
        ]
    if rows > 1:
        found.append(
            (
                np.full(rows, want[0]),
                "every element of out holds row 0's sum: each program must sum its own row, "
                "`row = tl.program_id(0)`, starting at `x_ptr + row * x_row_stride`.",
            )
        )
    if cols < block:
        found.append(
            (
                np.zeros(rows),
                f"every row sums to 0 in this case, whose rows ({cols} column"
                f"{'s' if cols != 1 else ''}) are shorter than BLOCK_SIZE = {block}: nothing was "
                "added. The loop must run once per started block, cdiv(n_cols, BLOCK_SIZE) times "
                f"(1 here, not n_cols // BLOCK_SIZE = 0): {loop}.",
            )
        )
    return found


def _float16_sums(case: TritonCase) -> dict[str, np.ndarray]:
    """The row sums float16 rounding gives: the values rounded, a float16 lane accumulator
    (``acc += x`` per block, then ``tl.sum``), and each block's ``tl.sum`` taken in float16."""
    x, block = case.extra["x"], case.extra["block"]
    half = x.astype(np.float16)
    acc = np.zeros((x.shape[0], block), np.float16)
    partials = np.zeros(x.shape[0], np.float32)
    for start in range(0, x.shape[1], block):
        chunk = half[:, start : start + block]
        acc[:, : chunk.shape[1]] = acc[:, : chunk.shape[1]] + chunk
        partials += chunk.sum(axis=1, dtype=np.float16).astype(np.float32)
    return {
        "inputs": half.astype(np.float64).sum(axis=1),
        "accumulator": acc.sum(axis=1, dtype=np.float16).astype(np.float64),
        "partials": partials.astype(np.float64),
    }


def _row_sum_hint(case: TritonCase, mismatch: Mismatch) -> str:
    got, want = mismatch.got, mismatch.expected
    x, block, rows = case.extra["x"], case.extra["block"], mismatch.got.size
    written = ~mismatch.unwritten
    if mismatch.unwritten.any() and not mismatch.wrong.any():
        missing = np.flatnonzero(mismatch.unwritten)
        cols = int(case.args.get("n_cols", 0))
        if 0 < cols < rows and list(missing) == list(range(cols, rows)):
            # exactly the rows from n_cols on: a row index compared with the column count
            return (
                f"out[{ev.describe_indices(missing)}] never written, the other rows right: "
                f"exactly the rows from {cols} on, and {cols} is n_cols, the number of columns. "
                "A mask on the store (or a condition) compares the row with n_cols: the store "
                "of row r needs no mask (one program per row), or `r < n_rows`."
            )
        return (
            f"out[{ev.describe_indices(missing)}] never written, the other rows right: the "
            "program of row r must store its sum at `out_ptr + r` with `r = tl.program_id(0)` "
            "(the grid has one program per row)."
        )
    for pattern, text in _row_sum_candidates(case):
        scale = max(1.0, float(np.abs(pattern).max(initial=0.0)))
        if _fits(got, pattern, written, rtol=1e-4, atol=1e-5 * scale) and not _fits(
            want, pattern, written, rtol=1e-4, atol=1e-5 * scale
        ):
            return text
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.abs(got - want) / np.maximum(np.abs(want), 1e-30)
    if case.extra["dtype"] != "float16" and ev.nearest_candidate(got, want, _float16_sums(case)):
        return (
            f"your sums are off by up to {np.abs(got - want).max():.2g}, as float16 rounding "
            "gives (the values or the running sums rounded to float16): keep the loaded values "
            "and the accumulator in float32 (`acc = tl.zeros((BLOCK_SIZE,), "
            "dtype=tl.float32)`), and convert a float16 input with `.to(tl.float32)`."
        )
    if case.extra["dtype"] == "float16" and np.isfinite(relative).all() and relative.max() < 1e-2:
        return (
            f"only the case with float16 x is wrong, by at most {relative.max():.1e} of each sum "
            "(the float32 cases were right): the sums were rounded to float16 along the way. "
            "Convert each block to float32 as you load it, `tl.load(...).to(tl.float32)`, and "
            "accumulate in float32 (`acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)`)."
        )
    if case.extra["strided"]:
        return (
            f"only the case where x is a view with row stride {case.args['x_row_stride']} "
            f"(n_cols = {x.shape[1]}) is wrong; the contiguous cases were right: row r starts at "
            "`x_ptr + r * x_row_stride`, not `r * n_cols`."
        ) + _observed(case, mismatch)
    bad = np.flatnonzero(mismatch.wrong | mismatch.unwritten)
    which = "every row" if bad.size == rows else f"rows {ev.describe_indices(bad)}"
    return (
        f"{which} of this case (x {rows}x{x.shape[1]}, BLOCK_SIZE = {block}) came out wrong. "
        "Program r adds row r, `x_ptr + r * x_row_stride + cols`, for every block of columns, "
        "`for start in range(0, n_cols, BLOCK_SIZE)` with `cols = start + tl.arange(0, "
        "BLOCK_SIZE)`, masked with `cols < n_cols` and `other=0.0`, into a float32 accumulator, "
        "then stores it once at `out_ptr + r`."
    ) + _observed(case, mismatch)


register(
    triton_exercise(
        id="triton_row_sum",
        chapter=CHAPTER,
        title="A long row sum: a loop over blocks of a row",
        signature=ROW_SUM_SIGNATURE,
        launch_text=ROW_SUM_LAUNCH,
        cases=_row_sum_cases,
        hint=_row_sum_hint,
    )
)
