"""Lab 12's ramp (exercises 2 and 3: ``triton_outer_add``, ``triton_row_sum``): the reference
kernels (as in solutions/12_triton_lab.ipynb), alternative correct kernels, and known mistakes of
several kinds, as notebook cells (the format of ``ch12.py``)."""

from . import edit, right, wrong

OUTER_ADD = """
@triton.jit
def outer_add_kernel(x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=mask)
"""
ROW_SUM = """
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
"""

REFERENCE = {"triton_outer_add": OUTER_ADD, "triton_row_sum": ROW_SUM}

OOB = "outside"  # words of the out-of-bounds report
NO_MASK = "this access has no mask"
NO_STORE_MASK = "this store has no mask"
BAD_MASK = "your mask lets these lanes through"
GAP = "lie between the rows"
POWER = "must be a power of two"

ANSWERS = {
    "triton_outer_add": [
        right("reference", OUTER_ADD),
        right(
            "two_d_loads_and_where",  # x and y loaded as a column and a row of pointers
            """
            @triton.jit
            def outer_add_kernel(x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
                rows = (tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M))[:, None]
                cols = (tl.program_id(axis=1) * BLOCK_N + tl.arange(0, BLOCK_N))[None, :]
                col_x = tl.load(x_ptr + rows, mask=rows < M, other=0.0)
                row_y = tl.load(y_ptr + cols, mask=cols < N, other=0.0)
                inside = (rows < M) & (cols < N)
                tl.store(out_ptr + rows * out_row_stride + cols, tl.where(inside, col_x + row_y, 0.0), mask=inside)
            """,
        ),
        right(
            "broadcast_to_and_names",  # explicit broadcasts, other names, mask passed by position
            """
            @triton.jit
            def outer_add_kernel(a, b, c, n_rows, n_cols, c_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
                i = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
                j = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
                ai = tl.broadcast_to(tl.expand_dims(tl.load(a + i, i < n_rows), 1), (BLOCK_M, BLOCK_N))
                bj = tl.broadcast_to(tl.expand_dims(tl.load(b + j, j < n_cols), 0), (BLOCK_M, BLOCK_N))
                keep = tl.expand_dims(i < n_rows, 1) & tl.expand_dims(j < n_cols, 0)
                tl.store(c + tl.expand_dims(i, 1) * c_stride + tl.expand_dims(j, 0), ai + bj, keep)
            """,
        ),
        wrong(
            "rows_only_store_mask",
            "mask",
            (OOB, "`out_ptr`", BAD_MASK, "`offs_n`"),
            edit(
                OUTER_ADD,
                (
                    "    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)\n",
                    "    mask = offs_m[:, None] < M\n",
                ),
            ),
            absent=(NO_MASK,),
        ),
        wrong(
            "no_store_mask",
            "mask",
            (OOB, "`out_ptr`", NO_STORE_MASK),
            edit(OUTER_ADD, ("x[:, None] + y[None, :], mask=mask)", "x[:, None] + y[None, :])")),
        ),
        wrong(
            "no_load_mask_on_y",
            "mask",
            (OOB, "`y_ptr`", NO_MASK, "line 8"),
            edit(
                OUTER_ADD,
                ("y = tl.load(y_ptr + offs_n, mask=offs_n < N)", "y = tl.load(y_ptr + offs_n)"),
            ),
        ),
        wrong(
            "column_mask_off_by_one",
            "mask",
            ("columns 49 are never written", "the last columns are left out", "`offs_n < N`"),
            edit(OUTER_ADD, ("(offs_n[None, :] < N)", "(offs_n[None, :] < N - 1)")),
        ),
        wrong(
            "program_ids_exchanged",
            "pointer",
            ("program ids are exchanged", "`pid_m = tl.program_id(0)`"),
            edit(
                OUTER_ADD,
                ("pid_m = tl.program_id(0)", "pid_m = tl.program_id(1)"),
                ("pid_n = tl.program_id(1)", "pid_n = tl.program_id(0)"),
            ),
        ),
        wrong(
            "both_ids_from_axis_0",
            "pointer",
            ("on the diagonal", "`pid_n = tl.program_id(1)`"),
            edit(OUTER_ADD, ("pid_n = tl.program_id(1)", "pid_n = tl.program_id(0)")),
        ),
        wrong(
            "no_column_tile_offset",
            "pointer",
            ("only columns 0 to 31", "every program wrote column tile 0"),
            edit(OUTER_ADD, ("offs_n = pid_n * BLOCK_N + tl.arange", "offs_n = tl.arange")),
        ),
        wrong(
            "x_loaded_from_first_tile",
            "pointer",
            ("every row tile holds x[0] to x[15]", "load of x"),
            edit(
                OUTER_ADD,
                (
                    "x = tl.load(x_ptr + offs_m, mask=offs_m < M)",
                    "x = tl.load(x_ptr + tl.arange(0, BLOCK_M), mask=tl.arange(0, BLOCK_M) < M)",
                ),
            ),
        ),
        wrong(
            "out_rows_n_apart",
            "pointer",
            (OOB, "`out_ptr`", GAP, "row stride"),
            edit(OUTER_ADD, ("offs_m[:, None] * out_row_stride", "offs_m[:, None] * N")),
        ),
        wrong(
            "tile_transposed",
            "formula",
            ("line 11", "`x[:, None]` is a column (BLOCK_M x 1)"),
            edit(OUTER_ADD, ("x[:, None] + y[None, :]", "x[None, :] + y[:, None]")),
        ),
        wrong(
            "multiplies",
            "formula",
            ("x[i] * y[j]", "`x[i] + y[j]`"),
            edit(OUTER_ADD, ("x[:, None] + y[None, :]", "x[:, None] * y[None, :]")),
        ),
        wrong(
            "block_not_power_of_two",
            "block",
            (POWER,),
            edit(
                OUTER_ADD,
                ("pid_n * BLOCK_N + tl.arange(0, BLOCK_N)", "pid_n * BLOCK_N + tl.arange(0, 50)"),
            ),
        ),
        wrong(
            "typo_in_tl",
            "typo",
            ("`programid` does not exist", "a typo?"),
            edit(OUTER_ADD, ("pid_n = tl.program_id(1)", "pid_n = tl.programid(1)")),
        ),
        wrong(
            "no_row_stride_parameter",
            "signature",
            ("the expected signature",),
            edit(
                OUTER_ADD,
                ("out_ptr, M, N, out_row_stride, BLOCK_M", "out_ptr, M, N, BLOCK_M"),
                ("offs_m[:, None] * out_row_stride", "offs_m[:, None] * N"),
            ),
        ),
    ],
    "triton_row_sum": [
        right("reference", ROW_SUM),
        right(
            "scalar_total_per_block",  # a scalar running total, each block summed in float32
            """
            @triton.jit
            def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
                r = tl.program_id(axis=0)
                total = tl.zeros((), dtype=tl.float32)
                for start in tl.range(0, n_cols, BLOCK_SIZE):
                    offs = start + tl.arange(0, BLOCK_SIZE)
                    block = tl.load(x_ptr + r * x_row_stride + offs, mask=offs < n_cols, other=0.0)
                    total += tl.sum(block.to(tl.float32), axis=0)
                tl.store(out_ptr + r, total)
            """,
        ),
        right(
            "count_blocks_with_cdiv",  # the loop counts blocks; the masked lanes zeroed by tl.where
            """
            @triton.jit
            def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
                pid = tl.program_id(0)
                lanes = tl.arange(0, BLOCK_SIZE)
                acc = tl.zeros((BLOCK_SIZE,), tl.float32)
                for b in range(tl.cdiv(n_cols, BLOCK_SIZE)):
                    cols = b * BLOCK_SIZE + lanes
                    keep = cols < n_cols
                    v = tl.load(x_ptr + pid * x_row_stride + cols, mask=keep).to(tl.float32)
                    acc = acc + tl.where(keep, v, 0.0)
                tl.store(out_ptr + pid + lanes, tl.sum(acc, 0) + tl.zeros((BLOCK_SIZE,), tl.float32), mask=lanes < 1)
            """,
        ),
        wrong(
            "one_block_no_loop",
            "formula",
            ("the sum of its first BLOCK_SIZE = 128 columns only", "loop over every block"),
            """
            @triton.jit
            def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
                row = tl.program_id(0)
                cols = tl.arange(0, BLOCK_SIZE)
                x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0)
                tl.store(out_ptr + row, tl.sum(x.to(tl.float32), axis=0))
            """,
        ),
        wrong(
            "columns_do_not_move",
            "pointer",
            ("8 times the sum of its first 128 columns", "must move with the loop"),
            edit(
                ROW_SUM,
                ("cols = start + tl.arange(0, BLOCK_SIZE)", "cols = tl.arange(0, BLOCK_SIZE)"),
            ),
        ),
        wrong(
            "accumulator_replaced",
            "formula",
            ("last block only", "`acc += ...`"),
            edit(ROW_SUM, ("acc += x.to(tl.float32)", "acc = x.to(tl.float32)")),
        ),
        wrong(
            "whole_blocks_only",  # n_cols // BLOCK_SIZE blocks: the partial block is dropped
            "formula",
            ("leaves out its last block (columns 896 to 999", "partial one"),
            edit(
                ROW_SUM,
                (
                    "for start in range(0, n_cols, BLOCK_SIZE):",
                    "for b in range(0, n_cols // BLOCK_SIZE):",
                ),
                ("cols = start + tl.arange", "cols = b * BLOCK_SIZE + tl.arange"),
            ),
        ),
        wrong(
            "no_mask",
            "mask",
            (OOB, "`x_ptr`", NO_MASK),
            edit(
                ROW_SUM,
                (
                    "x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)",
                    "x = tl.load(x_row + cols)",
                ),
            ),
        ),
        wrong(
            "mask_drops_last_column",
            "mask",
            ("leaves out the last column (999)", "`cols < n_cols`"),
            edit(ROW_SUM, ("mask=cols < n_cols,", "mask=cols < n_cols - 1,")),
        ),
        wrong(
            "rows_n_cols_apart",
            "pointer",
            (OOB, "`x_ptr`", GAP),
            edit(ROW_SUM, ("row * x_row_stride", "row * n_cols")),
        ),
        wrong(
            "row_from_axis_1",
            "pointer",
            ("out[1-4] never written", "`r = tl.program_id(0)`"),
            edit(ROW_SUM, ("row = tl.program_id(0)", "row = tl.program_id(1)")),
        ),
        wrong(
            "float16_partial_sums",
            "numerics",
            ("only the case with float16 x is wrong", "`tl.load(...).to(tl.float32)`"),
            """
            @triton.jit
            def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
                row = tl.program_id(0)
                total = 0.0
                for start in range(0, n_cols, BLOCK_SIZE):
                    cols = start + tl.arange(0, BLOCK_SIZE)
                    total += tl.sum(tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0), axis=0)
                tl.store(out_ptr + row, total)
            """,
        ),
        wrong(
            "float16_accumulator",
            "numerics",
            ("as float16 rounding gives", "the accumulator in float32"),
            edit(
                ROW_SUM,
                (
                    "acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)",
                    "acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float16)",
                ),
                ("acc += x.to(tl.float32)", "acc += x.to(tl.float16)"),
            ),
        ),
        wrong(
            "mean_not_sum",
            "formula",
            ("row means", "n_cols = 1000"),
            edit(ROW_SUM, ("tl.sum(acc, axis=0))", "tl.sum(acc, axis=0) / n_cols)")),
        ),
        wrong(
            "integer_accumulator",  # `total = 0` in the interpreter is fine; a GPU's compiler refuses
            "compile",
            ("rejects it for a GPU",),
            """
            @triton.jit
            def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
                row = tl.program_id(0)
                total = 0
                for start in range(0, n_cols, BLOCK_SIZE):
                    cols = start + tl.arange(0, BLOCK_SIZE)
                    x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0)
                    total += tl.sum(x.to(tl.float32), axis=0)
                tl.store(out_ptr + row, total)
            """,
        ),
        wrong(
            "typo_in_tl",
            "typo",
            ("`arrange` does not exist", "a typo?"),
            edit(
                ROW_SUM,
                (
                    "cols = start + tl.arange(0, BLOCK_SIZE)",
                    "cols = start + tl.arrange(0, BLOCK_SIZE)",
                ),
            ),
        ),
        wrong(
            "stores_nothing",
            "writes-nothing",
            ("wrote nothing at all", "tl.store"),
            edit(
                ROW_SUM,
                (
                    "    tl.store(out_ptr + row, tl.sum(acc, axis=0))\n",
                    "    total = tl.sum(acc, axis=0)\n",
                ),
            ),
        ),
    ],
}
