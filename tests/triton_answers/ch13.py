"""Lab 13's weight-only int8 GEMV (``serving_int8_gemv``, part 2 of
solutions/13_serving_lab.ipynb): the reference, alternative correct kernels, and known mistakes
of several kinds, as notebook cells (the format of ``ch12.py``)."""

from . import edit, right, wrong

INT8_GEMV = """
@triton.jit
def int8_gemv_kernel(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < n_cols
        q = tl.load(q_ptr + row * n_cols + cols, mask=inside, other=0)
        s = tl.load(scale_ptr + row * (n_cols // GROUP) + cols // GROUP, mask=inside, other=0.0)
        x = tl.load(x_ptr + cols, mask=inside, other=0.0)
        acc += q.to(tl.float32) * s * x
    tl.store(y_ptr + row, tl.sum(acc, axis=0))
"""


def _edit(*replacements):
    return edit(INT8_GEMV, *replacements)


ANSWERS = {
    "serving_int8_gemv": [
        right("reference", INT8_GEMV),
        right(
            "scalar_total_and_where",  # a scalar running total; padding zeroed with tl.where
            """
            @triton.jit
            def int8_gemv_kernel(qp, sp, xp, yp, n, GROUP: tl.constexpr, BLOCK: tl.constexpr):
                r = tl.program_id(axis=0)
                groups_per_row = n // GROUP
                total = 0.0
                for k in range(0, tl.cdiv(n, BLOCK)):
                    c = k * BLOCK + tl.arange(0, BLOCK)
                    m = c < n
                    w = tl.load(qp + r * n + c, m).to(tl.float32) * tl.load(sp + r * groups_per_row + c // GROUP, m)
                    total += tl.sum(tl.where(m, w * tl.load(xp + c, m), 0.0), axis=0)
                tl.store(yp + r, total)
            """,
        ),
        right(
            "pointer_increments",  # pointers advanced by BLOCK each pass, scales by column
            """
            @triton.jit
            def int8_gemv_kernel(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):
                row = tl.program_id(0)
                offs = tl.arange(0, BLOCK)
                q_ptrs = q_ptr + row * n_cols + offs
                x_ptrs = x_ptr + offs
                acc = tl.zeros((BLOCK,), dtype=tl.float32)
                for start in range(0, n_cols, BLOCK):
                    cols = start + offs
                    inside = cols < n_cols
                    group = cols // GROUP
                    scale = tl.load(scale_ptr + row * (n_cols // GROUP) + group, mask=inside, other=0.0)
                    acc = acc + tl.load(q_ptrs, mask=inside, other=0).to(tl.float32) * scale * tl.load(x_ptrs, mask=inside, other=0.0)
                    q_ptrs += BLOCK
                    x_ptrs += BLOCK
                tl.store(y_ptr + row, tl.sum(acc, axis=0))
            """,
        ),
        wrong(
            "one_scale_per_row",
            "formula",
            "one scale per group of GROUP columns",
            _edit(
                (
                    "s = tl.load(scale_ptr + row * (n_cols // GROUP) + cols // GROUP, mask=inside, other=0.0)",
                    "s = tl.load(scale_ptr + row * (n_cols // GROUP))",
                )
            ),
        ),
        wrong(
            "row_offset_missing_in_scales",
            "pointer",
            "every row used row 0's scales",
            _edit(
                ("scale_ptr + row * (n_cols // GROUP) + cols // GROUP", "scale_ptr + cols // GROUP")
            ),
        ),
        wrong(
            "group_index_off_by_one",
            "pointer",
            ("`scale_ptr`", "r * (n_cols // GROUP) + c // GROUP"),
            _edit(("cols // GROUP, mask", "cols // GROUP + 1, mask")),
        ),
        wrong(
            "one_scale_per_block",
            "formula",
            "that of its first column",
            _edit(
                (
                    "s = tl.load(scale_ptr + row * (n_cols // GROUP) + cols // GROUP, mask=inside, other=0.0)",
                    "s = tl.load(scale_ptr + row * (n_cols // GROUP) + start // GROUP)",
                )
            ),
        ),
        wrong(
            "scale_left_out",
            "formula",
            "used as raw integers",
            _edit(("acc += q.to(tl.float32) * s * x", "acc += q.to(tl.float32) * x")),
        ),
        wrong(
            "read_as_unsigned",
            "numerics",
            "256 + q",
            _edit(("q.to(tl.float32) * s * x", "q.to(tl.uint8).to(tl.float32) * s * x")),
        ),
        wrong(
            "float16_sum",
            "numerics",
            ("65,504", "float32"),
            _edit(
                (
                    "acc = tl.zeros((BLOCK,), dtype=tl.float32)",
                    "acc = tl.zeros((BLOCK,), dtype=tl.float16)",
                ),
                (
                    "acc += q.to(tl.float32) * s * x",
                    "acc += (q.to(tl.float32) * s * x).to(tl.float16)",
                ),
            ),
        ),
        wrong(
            "last_block_unmasked",
            "mask",
            ("outside", "no mask"),
            _edit(
                (
                    "q = tl.load(q_ptr + row * n_cols + cols, mask=inside, other=0)",
                    "q = tl.load(q_ptr + row * n_cols + cols)",
                ),
                ("x = tl.load(x_ptr + cols, mask=inside, other=0.0)", "x = tl.load(x_ptr + cols)"),
            ),
        ),
    ],
}
