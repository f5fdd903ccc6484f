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

PAGED = """
@triton.jit
def paged_attention_kernel(q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, max_blocks, scale, D, BLOCK_SIZE: tl.constexpr, BLOCK_D: tl.constexpr):
    seq = tl.program_id(0)
    length = tl.load(lens_ptr + seq)
    d = tl.arange(0, BLOCK_D)
    t = tl.arange(0, BLOCK_SIZE)
    q = tl.load(q_ptr + seq * D + d, mask=d < D, other=0.0)
    m = tl.max(tl.full((BLOCK_SIZE,), float("-inf"), tl.float32), axis=0)
    total = tl.sum(tl.zeros((BLOCK_SIZE,), tl.float32), axis=0)
    acc = tl.zeros((BLOCK_D,), tl.float32)
    for b in range(0, tl.cdiv(length, BLOCK_SIZE)):
        block = tl.load(table_ptr + seq * max_blocks + b)
        valid = b * BLOCK_SIZE + t < length
        offsets = block * BLOCK_SIZE * D + t[:, None] * D + d[None, :]
        inside = valid[:, None] & (d[None, :] < D)
        k = tl.load(k_ptr + offsets, mask=inside, other=0.0)
        s = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        total = total * alpha + tl.sum(p, axis=0)
        v = tl.load(v_ptr + offsets, mask=inside, other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(out_ptr + seq * D + d, acc / total, mask=d < D)
"""


def _paged(*replacements):
    return edit(PAGED, *replacements)


ANSWERS["serving_paged_attention"] = [
    right("reference", PAGED),
    right(
        "two_passes",  # the maximum first, then the sums: not online, still right
        """
        @triton.jit
        def paged_attention_kernel(q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, max_blocks, scale, D, BLOCK_SIZE: tl.constexpr, BLOCK_D: tl.constexpr):
            s_id = tl.program_id(0)
            n = tl.load(lens_ptr + s_id)
            dd = tl.arange(0, BLOCK_D)
            tt = tl.arange(0, BLOCK_SIZE)
            qv = tl.load(q_ptr + s_id * D + dd, mask=dd < D, other=0.0)
            nb = (n + BLOCK_SIZE - 1) // BLOCK_SIZE
            best = tl.full((BLOCK_SIZE,), float("-inf"), tl.float32)
            for b in range(0, nb):
                phys = tl.load(table_ptr + s_id * max_blocks + b)
                rows = phys * BLOCK_SIZE + tt
                ok = b * BLOCK_SIZE + tt < n
                kk = tl.load(k_ptr + rows[:, None] * D + dd[None, :], mask=ok[:, None] & (dd[None, :] < D), other=0.0)
                best = tl.maximum(best, tl.where(ok, tl.sum(kk * qv[None, :], axis=1) * scale, float("-inf")))
            top = tl.max(best, axis=0)
            den = tl.zeros((BLOCK_SIZE,), tl.float32)
            num = tl.zeros((BLOCK_D,), tl.float32)
            for b in range(0, nb):
                phys = tl.load(table_ptr + s_id * max_blocks + b)
                rows = phys * BLOCK_SIZE + tt
                ok = b * BLOCK_SIZE + tt < n
                both = ok[:, None] & (dd[None, :] < D)
                kk = tl.load(k_ptr + rows[:, None] * D + dd[None, :], mask=both, other=0.0)
                w = tl.where(ok, tl.exp(tl.sum(kk * qv[None, :], axis=1) * scale - top), 0.0)
                den += w
                num += tl.sum(w[:, None] * tl.load(v_ptr + rows[:, None] * D + dd[None, :], mask=both, other=0.0), axis=0)
            tl.store(out_ptr + s_id * D + dd, num / tl.sum(den, axis=0), mask=dd < D)
        """,
    ),
    right(
        "exp2_online",  # base-2 exponentials with log2(e) folded into the scale
        _paged(
            ("    m = tl.max(", "    log2e = 1.4426950408889634\n    m = tl.max("),
            ("* scale, float", "* (scale * log2e), float"),
            ("alpha = tl.exp(m - m_new)", "alpha = tl.exp2(m - m_new)"),
            ("p = tl.exp(s - m_new)", "p = tl.exp2(s - m_new)"),
        ),
    ),
    wrong(
        "scale_left_out",
        "formula",
        "the scores were not scaled",
        _paged(("tl.sum(k * q[None, :], axis=1) * scale", "tl.sum(k * q[None, :], axis=1)")),
    ),
    wrong(
        "tail_unmasked",
        "mask",
        "slots past the sequence's length were attended to",
        _paged(
            (
                "inside = valid[:, None] & (d[None, :] < D)",
                "inside = d[None, :] < D",
            ),
            (
                'tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))',
                "tl.sum(k * q[None, :], axis=1) * scale",
            ),
        ),
    ),
    wrong(
        "tail_scored_zero",
        "mask",
        "exp(0 - m) still adds",
        _paged(
            (
                'tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))',
                "tl.sum(k * q[None, :], axis=1) * scale",
            )
        ),
    ),
    wrong(
        "logical_block_as_physical",
        "pointer",
        "those are the logical block numbers",
        _paged(("block = tl.load(table_ptr + seq * max_blocks + b)", "block = b")),
    ),
    wrong(
        "first_sequence_table",
        "pointer",
        ("a block number was -1", "table_ptr + seq * max_blocks + b"),
        _paged(("tl.load(table_ptr + seq * max_blocks + b)", "tl.load(table_ptr + b)")),
    ),
    wrong(
        "block_offset_without_block_size",
        "pointer",
        "not block * D",
        _paged(("offsets = block * BLOCK_SIZE * D + ", "offsets = block * D + ")),
    ),
    wrong(
        "output_not_rescaled",
        "numerics",
        "multiply acc by alpha",
        _paged(("acc = acc * alpha + ", "acc = acc + ")),
    ),
    wrong(
        "not_normalised",
        "formula",
        "not divided by the softmax's sum",
        _paged(("acc / total, mask", "acc, mask")),
    ),
    wrong(
        "sum_not_rescaled",
        "numerics",
        "running sum was not rescaled",
        _paged(("total = total * alpha + ", "total = total + ")),
    ),
]
