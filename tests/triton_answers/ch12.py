"""Lab 12 (Triton): the reference kernels (as in solutions/12_triton_lab.ipynb), alternative
correct kernels, and known mistakes of several kinds, as notebook cells."""

from . import edit, right, wrong

ADD = """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
"""
SOFTMAX = """
@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
"""
LAYERNORM = """
@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
"""
MATMUL = """
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACTIVATION: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
"""
ATTENTION = """
@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
"""
CROSS_ENTROPY = """
@triton.jit
def cross_entropy_kernel(h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
                         HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HIDDEN)
    row_ok = rows < n_rows
    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=row_ok[:, None], other=0.0)
    target = tl.load(target_ptr + rows, mask=row_ok, other=0)
    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_M,), dtype=tl.float32)
    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        w = tl.load(w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0)
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
"""

REFERENCE = {
    "triton_vector_add": ADD,
    "triton_softmax": SOFTMAX,
    "triton_layernorm": LAYERNORM,
    "triton_matmul": MATMUL,
    "triton_flash_attention": ATTENTION,
    "triton_cross_entropy": CROSS_ENTROPY,
}

OOB = "outside"  # words of the out-of-bounds report
NO_MASK = "this access has no mask"
NO_STORE_MASK = "this store has no mask"  # and it writes outside the tensor, not "reads garbage"
BAD_MASK = "your mask lets these lanes through"
POWER = "must be a power of two"
RUNNING_MAX = "start the running maximum"

ANSWERS = {
    "triton_vector_add": [
        right("reference", ADD),
        right(
            "where_and_other_names",
            """
            @triton.jit
            def add_kernel(a, b, c, n, BLOCK_SIZE: tl.constexpr):
                start = tl.program_id(0) * BLOCK_SIZE
                idx = start + tl.arange(0, BLOCK_SIZE)
                inside = idx < n
                total = tl.load(a + idx, mask=inside, other=0.0) + tl.load(b + idx, mask=inside, other=0.0)
                tl.store(c + idx, total, inside)
            """,
        ),
        right(
            "pointer_blocks",
            """
            @triton.jit
            def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
                offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                x_ptrs = x_ptr + offsets
                y_ptrs = y_ptr + offsets
                keep = offsets < n_elements
                tl.store(out_ptr + offsets, tl.load(x_ptrs, mask=keep) + tl.load(y_ptrs, mask=keep), mask=keep)
            """,
        ),
        wrong(
            "no_mask",
            "mask",
            (OOB, "`x_ptr`", "offsets 1000 to 1023", "line 6", NO_MASK),
            edit(ADD, (", mask=mask)", ")")),
            absent=(BAD_MASK,),
        ),
        wrong(
            "mask_off_by_one",
            "mask",
            (OOB, "offset 1000", BAD_MASK),
            edit(ADD, ("offsets < n_elements", "offsets <= n_elements")),
            absent=(NO_MASK,),
        ),
        wrong(
            "no_program_offset",
            "pointer",
            ("only the first block", "pid * BLOCK_SIZE"),
            edit(ADD, ("offsets = pid * BLOCK_SIZE + tl.arange", "offsets = tl.arange")),
        ),
        wrong(
            "block_index_from_axis_1",
            "pointer",
            ("every program wrote block 0", "`pid = tl.program_id(0)`"),
            edit(ADD, ("pid = tl.program_id(axis=0)", "pid = tl.program_id(axis=1)")),
        ),
        wrong(
            "multiplies",
            "formula",
            ("multiplied", "`x + y`"),
            edit(ADD, ("x + y", "x * y")),
        ),
        wrong(
            "block_not_power_of_two",
            "block",
            (POWER, "line 4"),
            edit(ADD, ("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 100)")),
        ),
        wrong(
            "typo_in_tl",
            "typo",
            ("`program_idx` does not exist", "a typo?"),
            edit(ADD, ("tl.program_id(axis=0)", "tl.program_idx(axis=0)")),
        ),
        wrong(
            "stores_into_x",
            "writes-input",
            ("changed its input `x_ptr`", "only read"),
            edit(ADD, ("tl.store(out_ptr + offsets", "tl.store(x_ptr + offsets")),
        ),
        wrong(
            "stores_nothing",
            "writes-nothing",
            ("wrote nothing at all", "tl.store"),
            edit(ADD, ("    tl.store(out_ptr + offsets, x + y, mask=mask)\n", "    z = x + y\n")),
        ),
        wrong(
            "python_list_in_kernel",
            "compile",
            ("rejects it for a GPU", "line 7"),
            edit(
                ADD,
                (
                    "    y = tl.load(y_ptr + offsets, mask=mask)\n",
                    "    try:\n        y = tl.load(y_ptr + offsets, mask=mask)\n    except ValueError:\n        y = x\n",
                ),
            ),
        ),
        wrong(
            "wrong_parameters",
            "signature",
            ("Your kernel takes (x_ptr, y_ptr, out_ptr, BLOCK_SIZE)", "the expected signature"),
            edit(
                ADD,
                ("out_ptr, n_elements, BLOCK_SIZE", "out_ptr, BLOCK_SIZE"),
                ("< n_elements", "< 1000"),
            ),
        ),
        wrong(
            "added_in_float16",
            "numerics",
            ("what float16 inputs give",),
            edit(
                ADD,
                (
                    "tl.store(out_ptr + offsets, x + y, mask=mask)",
                    "tl.store(out_ptr + offsets, x.to(tl.float16) + y.to(tl.float16), mask=mask)",
                ),
            ),
        ),
    ],
}

ANSWERS["triton_softmax"] = [
    right("reference", SOFTMAX),
    right(
        "max_pass_then_sum_pass",  # three passes: max, then sum, then write
        """
        @triton.jit
        def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
            row = tl.program_id(0)
            lanes = tl.arange(0, BLOCK_SIZE)
            biggest = tl.full((BLOCK_SIZE,), -float("inf"), dtype=tl.float32)
            for start in range(0, n_cols, BLOCK_SIZE):
                x = tl.load(x_ptr + row * x_row_stride + start + lanes, mask=start + lanes < n_cols, other=-float("inf"))
                biggest = tl.maximum(biggest, x)
            m = tl.max(biggest, axis=0)
            total = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
            for start in range(0, n_cols, BLOCK_SIZE):
                x = tl.load(x_ptr + row * x_row_stride + start + lanes, mask=start + lanes < n_cols, other=-float("inf"))
                total += tl.exp(x - m)
            s = tl.sum(total, axis=0)
            for start in range(0, n_cols, BLOCK_SIZE):
                cols = start + lanes
                x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0)
                tl.store(out_ptr + row * out_row_stride + cols, tl.exp(x - m) / s, mask=cols < n_cols)
        """,
    ),
    right(
        "lane_wise_running_state",  # each lane keeps its own (m, s); merged at the end
        """
        @triton.jit
        def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
            pid = tl.program_id(0)
            x_start = x_ptr + pid * x_row_stride
            m_lane = tl.full((BLOCK_SIZE,), float("-inf"), tl.float32)
            s_lane = tl.zeros((BLOCK_SIZE,), tl.float32)
            for start in tl.range(0, n_cols, BLOCK_SIZE):
                cols = start + tl.arange(0, BLOCK_SIZE)
                x = tl.load(x_start + cols, mask=cols < n_cols, other=float("-inf"))
                m_next = tl.maximum(m_lane, x)
                safe = tl.where(m_next == float("-inf"), 0.0, m_next)
                s_lane = s_lane * tl.exp(m_lane - safe) + tl.exp(x - safe)
                m_lane = m_next
            m = tl.max(m_lane, axis=0)
            s = tl.sum(s_lane * tl.exp(m_lane - m), axis=0)
            inv = 1.0 / s
            for start in tl.range(0, n_cols, BLOCK_SIZE):
                cols = start + tl.arange(0, BLOCK_SIZE)
                x = tl.load(x_start + cols, mask=cols < n_cols)
                tl.store(out_ptr + pid * out_row_stride + cols, tl.exp(x - m) * inv, mask=cols < n_cols)
        """,
    ),
    wrong(
        "max_started_at_zero",
        "numerics",
        (RUNNING_MAX, "not 0", "values from -200 to -180"),
        edit(SOFTMAX, ('    m = -float("inf")\n', "    m = 0.0\n")),
    ),
    wrong(
        "no_max_subtracted",
        "numerics",
        ("exp(100) overflows", "values up to 100"),
        edit(
            SOFTMAX,
            (
                "s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)",
                "s = s + tl.sum(tl.exp(x), axis=0)",
            ),
            ("tl.exp(x - m) / s", "tl.exp(x) / s"),
        ),
        absent=(RUNNING_MAX,),
    ),
    wrong(
        "sum_not_rescaled",
        "formula",
        ("not rescaled", "exp(m_old - m_new)"),
        edit(SOFTMAX, ("s = s * tl.exp(m - m_new) + ", "s = s + ")),
        absent=(RUNNING_MAX,),
    ),
    wrong(
        "padding_lanes_load_zero",
        "mask",
        ("past the end of the row count", "other=-float('inf')"),
        edit(
            SOFTMAX,
            (
                'mask=cols < n_cols, other=-float("inf"))\n        m_new',
                "mask=cols < n_cols, other=0.0)\n        m_new",
            ),
        ),
        absent=("not rescaled",),
    ),
    wrong(
        "row_stride_assumed",
        "pointer",
        ("between the rows of `x_ptr`", "64 elements apart but 50 long"),
        edit(SOFTMAX, ("x_row = x_ptr + row * x_row_stride", "x_row = x_ptr + row * n_cols")),
    ),
    wrong(
        "no_mask_on_the_loads",
        "mask",
        (OOB, "`x_ptr`", NO_MASK),
        edit(
            SOFTMAX,
            (
                'x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))',
                "x = tl.load(x_row + cols)",
            ),
        ),
    ),
    wrong(
        "run_time_block",
        "block",
        ("compile-time constant", "line 9", "not a run-time value"),
        edit(
            SOFTMAX,
            (
                "cols = start + tl.arange(0, BLOCK_SIZE)\n        x = tl.load(x_row + cols, mask=cols < n_cols, other",
                "cols = start + tl.arange(0, n_cols)\n        x = tl.load(x_row + cols, mask=cols < n_cols, other",
            ),
        ),
    ),
    wrong(
        "rescale_inverted",
        "formula",
        ("inf or NaN on ordinary values", "exp(m_old - m_new)"),
        edit(SOFTMAX, ("s = s * tl.exp(m - m_new)", "s = s * tl.exp(m_new - m)")),
    ),
    wrong(
        "output_doubled",
        "formula",
        ("Observed: the wrong values are the right ones times 2.",),
        edit(SOFTMAX, ("tl.exp(x - m) / s, mask=mask", "2 * tl.exp(x - m) / s, mask=mask")),
    ),
    wrong(
        "statistics_of_the_first_block_only",
        "formula",
        ("first BLOCK_SIZE columns only",),
        edit(
            SOFTMAX,
            (
                '    for start in range(0, n_cols, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))\n        m_new',
                '    for start in range(0, BLOCK_SIZE, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))\n        m_new',
            ),
        ),
    ),
    wrong(
        "partial_block_never_written",
        "mask",
        ("never written and the others are right", "including the last, partial one"),
        edit(
            SOFTMAX,
            (
                "    for start in range(0, n_cols, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        mask",
                "    for start in range(0, n_cols // BLOCK_SIZE * BLOCK_SIZE, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        mask",
            ),
        ),
    ),
]

ANSWERS["triton_layernorm"] = [
    right("reference", LAYERNORM),
    right(
        "variance_from_squares_of_centred_values",
        """
        @triton.jit
        def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
            row = tl.program_id(axis=0)
            offs = tl.arange(0, BLOCK_SIZE)
            valid = offs < n_cols
            x = tl.load(x_ptr + row * x_row_stride + offs, mask=valid, other=0.0).to(tl.float32)
            mean = tl.sum(x) / n_cols
            centred = tl.where(valid, x - mean, 0.0)
            var = tl.sum(centred * centred) / n_cols
            y = centred / tl.sqrt(var + eps)
            y = y * tl.load(w_ptr + offs, mask=valid, other=1.0) + tl.load(b_ptr + offs, mask=valid, other=0.0)
            tl.store(out_ptr + row * out_row_stride + offs, y, mask=valid)
        """,
    ),
    right(
        "rsqrt_and_fma",
        """
        @triton.jit
        def layernorm_kernel(x, w, b, out, sx, so, n, eps, BLOCK_SIZE: tl.constexpr):
            r = tl.program_id(0)
            c = tl.arange(0, BLOCK_SIZE)
            m = c < n
            v = tl.load(x + r * sx + c, mask=m, other=0.0)
            mu = tl.sum(v, axis=0) / n
            d = tl.where(m, v - mu, 0.0)
            rstd = tl.math.rsqrt(tl.sum(d * d, axis=0) / n + eps)
            tl.store(out + r * so + c, tl.fma(d * rstd, tl.load(w + c, mask=m), tl.load(b + c, mask=m)), mask=m)
        """,
    ),
    wrong(
        "unbiased_variance",
        "formula",
        ("n_cols - 1", "biased variance"),
        edit(
            LAYERNORM,
            (
                "var = tl.sum(diff * diff, axis=0) / n_cols",
                "var = tl.sum(diff * diff, axis=0) / (n_cols - 1)",
            ),
        ),
    ),
    wrong(
        "padding_lanes_in_variance",
        "mask",
        ("past the end of the row count in your variance", "tl.where(mask, x - mean, 0.0)"),
        edit(LAYERNORM, ("diff = tl.where(mask, x - mean, 0.0)", "diff = x - mean")),
    ),
    wrong(
        "no_eps",
        "numerics",
        ("constant row", "add eps inside the square root"),
        edit(LAYERNORM, ("rstd = 1.0 / tl.sqrt(var + eps)", "rstd = 1.0 / tl.sqrt(var)")),
    ),
    wrong(
        "output_addressed_with_the_input_stride",
        "pointer",
        ("built with `x_row_stride`", "use `out_row_stride`"),
        edit(
            LAYERNORM,
            ("tl.store(out_ptr + row * out_row_stride", "tl.store(out_ptr + row * x_row_stride"),
        ),
    ),
    wrong(
        "multiplied_by_the_standard_deviation",
        "formula",
        ("instead of dividing by it",),
        edit(LAYERNORM, ("rstd = 1.0 / tl.sqrt(var + eps)", "rstd = tl.sqrt(var + eps)")),
    ),
    wrong(
        "eps_outside_the_square_root",
        "numerics",
        ("inside the square root", "variance is near or below eps"),
        edit(LAYERNORM, ("rstd = 1.0 / tl.sqrt(var + eps)", "rstd = 1.0 / (tl.sqrt(var) + eps)")),
    ),
    wrong(
        "mean_over_the_padded_block",
        "formula",
        ("divided by BLOCK_SIZE",),
        edit(
            LAYERNORM,
            ("mean = tl.sum(x, axis=0) / n_cols", "mean = tl.sum(x, axis=0) / BLOCK_SIZE"),
        ),
    ),
    wrong(
        "bias_left_out",
        "formula",
        ("add the bias b",),
        edit(LAYERNORM, ("diff * rstd * w + b, mask=mask)", "diff * rstd * w, mask=mask)")),
    ),
    wrong(
        "x_cast_to_float16_before_the_statistics",
        "numerics",
        ("rounded to float16",),
        edit(
            LAYERNORM,
            (
                "x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)",
                "x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float16).to(tl.float32)",
            ),
        ),
        absent=("E[x^2] - E[x]^2 in float32 gives",),
    ),
    wrong(
        "variance_as_mean_of_squares_minus_square_of_mean",
        "numerics",
        ("E[x^2] - E[x]^2", "cancel"),
        edit(
            LAYERNORM,
            (
                "var = tl.sum(diff * diff, axis=0) / n_cols",
                "var = tl.sum(x * x, axis=0) / n_cols - mean * mean",
            ),
        ),
    ),
    wrong(
        "row_stride_assumed",
        "pointer",
        ("between the rows of `x_ptr`", "row * <its row stride argument>"),
        edit(LAYERNORM, ("x_ptr + row * x_row_stride + cols", "x_ptr + row * n_cols + cols")),
    ),
    wrong(
        "no_affine",
        "formula",
        ("multiply by the weight and add the bias",),
        edit(LAYERNORM, ("diff * rstd * w + b", "diff * rstd")),
    ),
    wrong(
        "block_is_n_cols",
        "block",
        ("compile-time constant", "line 4", "power of two"),
        edit(LAYERNORM, ("cols = tl.arange(0, BLOCK_SIZE)", "cols = tl.arange(0, n_cols)")),
    ),
    wrong(
        "weight_without_mask",
        "mask",
        (OOB, "`w_ptr`", NO_MASK),
        edit(LAYERNORM, ("w = tl.load(w_ptr + cols, mask=mask)", "w = tl.load(w_ptr + cols)")),
    ),
]

ANSWERS["triton_matmul"] = [
    right("reference", MATMUL),
    right(
        "offsets_recomputed_each_step",
        """
        @triton.jit
        def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACTIVATION: tl.constexpr):
            rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
            cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k0 in range(0, tl.cdiv(K, BLOCK_K)):
                ks = k0 * BLOCK_K + tl.arange(0, BLOCK_K)
                a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                            mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
                b = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                            mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
                acc = tl.dot(a, b, acc)
            if ACTIVATION == "relu":
                acc = tl.where(acc > 0, acc, 0.0)
            tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc,
                     mask=(rows[:, None] < M) & (cols[None, :] < N))
        """,
    ),
    right(
        "grouped_program_order",  # a 2-D grid, remapped so that neighbouring programs share rows
        """
        @triton.jit
        def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACTIVATION: tl.constexpr):
            num_m = tl.cdiv(M, BLOCK_M)
            num_n = tl.cdiv(N, BLOCK_N)
            pid = tl.program_id(0) * num_n + tl.program_id(1)
            group = 2
            first_m = (pid // (group * num_n)) * group
            size = tl.minimum(num_m - first_m, group)
            pid_m = first_m + (pid % (group * num_n)) % size
            pid_n = (pid % (group * num_n)) // size
            offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k in range(0, K, BLOCK_K):
                offs_k = k + tl.arange(0, BLOCK_K)
                a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                            mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
                b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                            mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
                acc += tl.dot(a, b, out_dtype=tl.float32)
            if ACTIVATION == "relu":
                acc = tl.maximum(acc, 0.0)
            tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc,
                     mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
        """,
    ),
    wrong(
        "fp16_accumulator",
        "numerics",
        ("float16 accumulator", "keep the accumulator in float32"),
        edit(
            MATMUL,
            (
                "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
                "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)",
            ),
            ("acc += tl.dot(a, b)", "acc += tl.dot(a, b).to(tl.float16)"),
        ),
    ),
    wrong(
        "no_activation",
        "formula",
        ("the activation is missing", "tl.maximum(acc, 0.0)"),
        edit(MATMUL, ('    if ACTIVATION == "relu":\n        acc = tl.maximum(acc, 0.0)\n', "")),
    ),
    wrong(
        "activation_inside_the_k_loop",
        "formula",
        ("inside the K loop", "after the loop"),
        edit(
            MATMUL,
            (
                "acc += tl.dot(a, b)",
                'part = tl.dot(a, b)\n        if ACTIVATION == "relu":\n            part = tl.maximum(part, 0.0)\n        acc += part',
            ),
            ('    if ACTIVATION == "relu":\n        acc = tl.maximum(acc, 0.0)\n', ""),
        ),
    ),
    wrong(
        "b_rows_assumed_contiguous",
        "pointer",
        ("transposed view", "stride_bn"),
        edit(MATMUL, ("offs_n[None, :] * stride_bn", "offs_n[None, :]")),
    ),
    wrong(
        "k_tail_not_masked",
        "mask",
        (OOB, BAD_MASK),
        edit(
            MATMUL,
            ("mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k)", "mask=offs_m[:, None] < M"),
        ),
    ),
    wrong(
        "no_store_mask",
        "mask",
        (OOB, "wrote outside `c_ptr`", "writes over memory outside", NO_STORE_MASK),
        edit(
            MATMUL,
            (
                "tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))",
                "tl.store(c_ptrs, acc)",
            ),
        ),
        absent=("reads garbage", NO_MASK),
    ),
    wrong(
        "block_k_not_power_of_two",
        "block",
        (POWER,),
        edit(
            MATMUL,
            ("offs_k = tl.arange(0, BLOCK_K)", "offs_k = tl.arange(0, 24)"),
            ("BLOCK_K * stride", "24 * stride"),
            ("range(0, K, BLOCK_K)", "range(0, K, 24)"),
        ),
    ),
    wrong(
        "stores_float16",
        "numerics",
        ("rounded to float16 before the store",),
        edit(MATMUL, ("tl.store(c_ptrs, acc,", "tl.store(c_ptrs, acc.to(tl.float16),")),
    ),
    wrong(
        "b_advanced_by_block_k_elements",
        "pointer",
        ("`b_ptrs += BLOCK_K * stride_bk`",),
        edit(MATMUL, ("b_ptrs += BLOCK_K * stride_bk", "b_ptrs += BLOCK_K")),
    ),
    wrong(
        "program_ids_swapped",
        "pointer",
        ("program ids are exchanged", "`pid_m = tl.program_id(0)`"),
        edit(
            MATMUL,
            ("pid_m = tl.program_id(0)", "pid_m = tl.program_id(1)"),
            ("pid_n = tl.program_id(1)", "pid_n = tl.program_id(0)"),
        ),
    ),
]

ANSWERS["triton_flash_attention"] = [
    right("reference", ATTENTION),
    right(
        "exp2_with_log2e",  # the Triton tutorial's trick: exp(x) = exp2(x * log2(e))
        """
        @triton.jit
        def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
                             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
            offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_d = tl.arange(0, HEAD_DIM)
            q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
            qk_scale = sm_scale * 1.4426950408889634
            m_i = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
            l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
            acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
            for start_n in range(0, seq_len, BLOCK_N):
                offs_n = start_n + tl.arange(0, BLOCK_N)
                kv_mask = offs_n[:, None] < seq_len
                k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=kv_mask, other=0.0)
                s = tl.dot(q, tl.trans(k)) * qk_scale
                allowed = offs_n[None, :] < seq_len
                if CAUSAL:
                    allowed &= offs_n[None, :] <= offs_m[:, None]
                s = tl.where(allowed, s, float("-inf"))
                m_new = tl.maximum(m_i, tl.max(s, 1))
                alpha = tl.math.exp2(m_i - m_new)
                p = tl.math.exp2(s - m_new[:, None])
                v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=kv_mask, other=0.0)
                acc = acc * alpha[:, None] + tl.dot(p, v.to(tl.float32))
                l_i = l_i * alpha + tl.sum(p, 1)
                m_i = m_new
            tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], acc / l_i[:, None], mask=offs_m[:, None] < seq_len)
        """,
    ),
    right(
        "normalise_as_you_go",  # keeps acc normalised by l_i at every step (FlashAttention-1 style)
        """
        @triton.jit
        def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
                             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
            rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
            dims = tl.arange(0, HEAD_DIM)
            q = tl.load(q_ptr + rows[:, None] * stride_q + dims[None, :], mask=rows[:, None] < seq_len, other=0.0)
            q = (q.to(tl.float32) * sm_scale).to(tl.float16)
            m = tl.full((BLOCK_M,), float("-inf"), tl.float32)
            l = tl.zeros((BLOCK_M,), tl.float32)
            o = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
            for j in range(0, tl.cdiv(seq_len, BLOCK_N)):
                cols = j * BLOCK_N + tl.arange(0, BLOCK_N)
                k = tl.load(k_ptr + cols[:, None] * stride_k + dims[None, :], mask=cols[:, None] < seq_len, other=0.0)
                v = tl.load(v_ptr + cols[:, None] * stride_v + dims[None, :], mask=cols[:, None] < seq_len, other=0.0)
                s = tl.dot(q, tl.trans(k))
                ok = (cols[None, :] < seq_len) & ((rows[:, None] >= cols[None, :]) | (not CAUSAL))
                s = tl.where(ok, s, float("-inf"))
                m_new = tl.maximum(m, tl.max(s, axis=1))
                p = tl.exp(s - m_new[:, None])
                l_new = l * tl.exp(m - m_new) + tl.sum(p, axis=1)
                o = o * (l * tl.exp(m - m_new) / l_new)[:, None] + tl.dot(p, v.to(tl.float32)) / l_new[:, None]
                m = m_new
                l = l_new
            tl.store(o_ptr + rows[:, None] * stride_o + dims[None, :], o, mask=rows[:, None] < seq_len)
        """,
    ),
    wrong(
        "no_scale",
        "formula",
        ("not scaled", "sm_scale"),
        edit(ATTENTION, ("s = tl.dot(q, tl.trans(k)) * sm_scale", "s = tl.dot(q, tl.trans(k))")),
    ),
    wrong(
        "causal_mask_off_by_one",
        "formula",
        ("off by one", ">= offs_n"),
        edit(
            ATTENTION,
            ("(offs_m[:, None] >= offs_n[None, :])", "(offs_m[:, None] > offs_n[None, :])"),
        ),
    ),
    wrong(
        "max_started_at_zero",
        "numerics",
        (RUNNING_MAX, "not 0", "very negative"),
        edit(
            ATTENTION,
            (
                'm_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)',
                "m_i = tl.zeros((BLOCK_M,), dtype=tl.float32)",
            ),
        ),
    ),
    wrong(
        "causal_ignored",
        "formula",
        ("matches attention without the mask",),
        edit(
            ATTENTION,
            (
                "        if CAUSAL:\n            keep = keep & (offs_m[:, None] >= offs_n[None, :])\n",
                "",
            ),
            ("if CAUSAL else seq_len", "if False else seq_len"),
        ),
    ),
    wrong(
        "padding_keys_not_masked",
        "mask",
        ("key columns past seq_len", "-inf"),
        edit(ATTENTION, ("keep = offs_n[None, :] < seq_len", "keep = offs_n[None, :] >= 0")),
    ),
    wrong(
        "acc_not_rescaled",
        "formula",
        ("accumulator is not rescaled", "alpha = exp(m_i - m_new)"),
        edit(ATTENTION, ("acc = acc * alpha[:, None] + tl.dot", "acc = acc + tl.dot")),
    ),
    wrong(
        "v_addressed_with_the_k_stride",
        "pointer",
        ("built with `stride_k`, the stride of `k_ptr`", "use `stride_v`"),
        edit(ATTENTION, ("offs_n[:, None] * stride_v", "offs_n[:, None] * stride_k")),
    ),
    wrong(
        "future_scores_zeroed",
        "formula",
        ("are 0, not -inf",),
        edit(ATTENTION, ('s = tl.where(keep, s, -float("inf"))', "s = tl.where(keep, s, 0.0)")),
    ),
    wrong(
        "sum_not_rescaled",
        "formula",
        ("running sum l_i is not rescaled",),
        edit(ATTENTION, ("l_i = l_i * alpha + tl.sum(p, axis=1)", "l_i = l_i + tl.sum(p, axis=1)")),
    ),
    wrong(
        "no_final_division",
        "formula",
        ("before the final division",),
        edit(ATTENTION, ("o = acc / l_i[:, None]", "o = acc")),
    ),
    wrong(
        "rescale_inverted",
        "formula",
        ("inf or NaN", "alpha = exp(m_i - m_new)"),
        edit(ATTENTION, ("alpha = tl.exp(m_i - m_new)", "alpha = tl.exp(m_new - m_i)")),
    ),
    wrong(
        "exp2_without_log2e",
        "formula",
        ("log2(e)",),
        edit(
            ATTENTION,
            ("p = tl.exp(s - m_new[:, None])", "p = tl.exp2(s - m_new[:, None])"),
            ("alpha = tl.exp(m_i - m_new)", "alpha = tl.exp2(m_i - m_new)"),
        ),
    ),
    wrong(
        "query_rows_not_masked",
        "mask",
        (OOB, "`q_ptr`", NO_MASK),
        edit(
            ATTENTION,
            (
                "q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)",
                "q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :])",
            ),
        ),
    ),
    wrong(
        "typo",
        "typo",
        ("`maximun` does not exist", "a typo?"),
        edit(ATTENTION, ("m_new = tl.maximum(m_i", "m_new = tl.maximun(m_i")),
    ),
]

ANSWERS["triton_cross_entropy"] = [
    right("reference", CROSS_ENTROPY),
    right(
        "log2_domain_and_gather_by_mask",
        """
        @triton.jit
        def cross_entropy_kernel(h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
                                 HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr):
            LOG2E: tl.constexpr = 1.4426950408889634
            rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
            ok = rows < n_rows
            h = tl.load(h_ptr + rows[:, None] * stride_h + tl.arange(0, HIDDEN)[None, :], mask=ok[:, None], other=0.0)
            t = tl.load(target_ptr + rows, mask=ok, other=-1)
            m = tl.full((BLOCK_M,), float("-inf"), tl.float32)
            s = tl.zeros((BLOCK_M,), tl.float32)
            z_t = tl.zeros((BLOCK_M,), tl.float32)
            for v0 in range(0, vocab, BLOCK_V):
                cols = v0 + tl.arange(0, BLOCK_V)
                w = tl.load(w_ptr + cols[:, None] * stride_w + tl.arange(0, HIDDEN)[None, :], mask=cols[:, None] < vocab, other=0.0)
                z = tl.where(cols[None, :] < vocab, tl.dot(h, tl.trans(w)), float("-inf"))
                m_new = tl.maximum(m, tl.max(z, axis=1))
                s = s * tl.math.exp2((m - m_new) * LOG2E) + tl.sum(tl.math.exp2((z - m_new[:, None]) * LOG2E), axis=1)
                m = m_new
                hit = cols[None, :] == t[:, None]
                z_t += tl.sum(tl.where(hit, z, 0.0), axis=1)
            tl.store(loss_ptr + rows, m + tl.log(s) - z_t, mask=ok)
        """,
    ),
    right(
        "two_passes_over_the_vocabulary",  # first the max, then the sum: logits computed twice
        """
        @triton.jit
        def cross_entropy_kernel(h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
                                 HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr):
            r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
            d = tl.arange(0, HIDDEN)
            h = tl.load(h_ptr + r[:, None] * stride_h + d[None, :], mask=r[:, None] < n_rows, other=0.0)
            m = tl.full((BLOCK_M,), float("-inf"), tl.float32)
            for v0 in range(0, vocab, BLOCK_V):
                c = v0 + tl.arange(0, BLOCK_V)
                w = tl.load(w_ptr + c[:, None] * stride_w + d[None, :], mask=c[:, None] < vocab, other=0.0)
                z = tl.where(c[None, :] < vocab, tl.dot(h, tl.trans(w)), float("-inf"))
                m = tl.maximum(m, tl.max(z, axis=1))
            target = tl.load(target_ptr + r, mask=r < n_rows, other=0)
            total = tl.zeros((BLOCK_M,), tl.float32)
            z_t = tl.zeros((BLOCK_M,), tl.float32)
            for v0 in range(0, vocab, BLOCK_V):
                c = v0 + tl.arange(0, BLOCK_V)
                w = tl.load(w_ptr + c[:, None] * stride_w + d[None, :], mask=c[:, None] < vocab, other=0.0)
                z = tl.where(c[None, :] < vocab, tl.dot(h, tl.trans(w)), float("-inf"))
                total += tl.sum(tl.exp(z - m[:, None]), axis=1)
                z_t += tl.sum(tl.where(c[None, :] == target[:, None], z, 0.0), axis=1)
            tl.store(loss_ptr + r, m + tl.log(total) - z_t, mask=r < n_rows)
        """,
    ),
    wrong(
        "max_started_at_zero",
        "numerics",
        (RUNNING_MAX, "logits near -150"),
        edit(
            CROSS_ENTROPY,
            (
                'm = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)',
                "m = tl.zeros((BLOCK_M,), dtype=tl.float32)",
            ),
        ),
    ),
    wrong(
        "no_max_subtracted",
        "numerics",
        ("exp(100) overflows", "logits near +100"),
        edit(
            CROSS_ENTROPY,
            (
                "s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)",
                "s = s + tl.sum(tl.exp(logits), axis=1)",
            ),
            ("m + tl.log(s) - picked", "tl.log(s) - picked"),
        ),
        absent=(RUNNING_MAX,),
    ),
    wrong(
        "vocab_tail_not_masked",
        "mask",
        ("columns past `vocab`", "-inf"),
        edit(
            CROSS_ENTROPY,
            ('        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))\n', ""),
        ),
    ),
    wrong(
        "sum_not_rescaled",
        "formula",
        ("not rescaled", "tl.exp(m - m_new)"),
        edit(CROSS_ENTROPY, ("s = s * tl.exp(m - m_new) + ", "s = s + ")),
    ),
    wrong(
        "w_addressed_with_the_h_stride",
        "pointer",
        ("built with `stride_h`, the stride of `h_ptr`", "use `stride_w`"),
        edit(CROSS_ENTROPY, ("cols[:, None] * stride_w", "cols[:, None] * stride_h")),
    ),
    wrong(
        "logits_rounded_to_float16",
        "numerics",
        ("logits rounded to float16",),
        edit(
            CROSS_ENTROPY,
            (
                "logits = tl.dot(h, tl.trans(w))",
                "logits = tl.dot(h, tl.trans(w)).to(tl.float16).to(tl.float32)",
            ),
        ),
    ),
    wrong(
        "rescale_inverted",
        "formula",
        ("inf or NaN", "exp(m_new - m) is inf"),
        edit(CROSS_ENTROPY, ("s = s * tl.exp(m - m_new)", "s = s * tl.exp(m_new - m)")),
    ),
    wrong(
        "block_log_sum_exps_added",
        "formula",
        ("log-sum-exps do not add",),
        edit(
            CROSS_ENTROPY,
            (
                "        m_new = tl.maximum(m, tl.max(logits, axis=1))\n"
                "        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)\n"
                "        m = m_new\n",
                "        top = tl.max(logits, axis=1)\n"
                "        s += top + tl.log(tl.sum(tl.exp(logits - top[:, None]), axis=1))\n",
            ),
            ("m + tl.log(s) - picked", "s - picked"),
        ),
    ),
    wrong(
        "sum_overwritten_each_block",
        "formula",
        ("only the last block's sum",),
        edit(CROSS_ENTROPY, ("s = s * tl.exp(m - m_new) + ", "s = ")),
    ),
    wrong(
        "max_left_out_of_the_loss",
        "formula",
        ("leaves out the maximum",),
        edit(CROSS_ENTROPY, ("m + tl.log(s) - picked", "tl.log(s) - picked")),
    ),
    wrong(
        "target_not_subtracted",
        "formula",
        ("not subtracted",),
        edit(CROSS_ENTROPY, ("m + tl.log(s) - picked", "m + tl.log(s)")),
    ),
    wrong(
        "target_compared_with_the_local_column",
        "pointer",
        ("column inside the block", "v0 + tl.arange(0, BLOCK_V)"),
        edit(
            CROSS_ENTROPY,
            (
                "tl.where(cols[None, :] == target[:, None]",
                "tl.where(tl.arange(0, BLOCK_V)[None, :] == target[:, None]",
            ),
        ),
    ),
    wrong(
        "sign_flipped",
        "formula",
        ("wrong sign",),
        edit(CROSS_ENTROPY, ("m + tl.log(s) - picked", "picked - m - tl.log(s)")),
    ),
    wrong(
        "w_rows_not_masked",
        "mask",
        (OOB, "`w_ptr`", NO_MASK),
        edit(CROSS_ENTROPY, (", mask=cols[:, None] < vocab, other=0.0)", ")")),
    ),
    wrong(
        "stores_its_logits_into_h",
        "writes-input",
        ("changed its input `h_ptr`",),
        edit(
            CROSS_ENTROPY,
            (
                "        m = m_new\n",
                "        m = m_new\n        tl.store(h_ptr + rows, m, mask=row_ok)\n",
            ),
        ),
    ),
]

# Judged by the whole call, not its first line (issue 25.2): a mask over several lines, or a
# mask on one dimension of a two-dimensional block; an unmasked store writes, it does not read.
ONE_DIMENSION = "the pointers move with `offs_m`, which the mask does not bound"
ANSWERS["triton_matmul"] += [
    right(
        "loads_over_several_lines",
        edit(
            MATMUL,
            (
                "a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)",
                "a = tl.load(\n            a_ptrs,\n            mask=(offs_m[:, None] < M)\n"
                "            & (offs_k[None, :] < K - k),\n            other=0.0,\n        )",
            ),
        ),
    ),
    wrong(
        "one_dimension_mask_over_several_lines",
        "mask",
        (OOB, "`a_ptr`", BAD_MASK, ONE_DIMENSION),
        edit(
            MATMUL,
            (
                "a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)",
                "a = tl.load(\n            a_ptrs,\n            mask=offs_k[None, :] < K - k,\n"
                "            other=0.0,\n        )",
            ),
        ),
        absent=(NO_MASK,),
    ),
    wrong(
        "one_dimension_mask_on_one_line",
        "mask",
        (OOB, "`a_ptr`", BAD_MASK, ONE_DIMENSION),
        edit(
            MATMUL,
            (
                "mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k)",
                "mask=offs_k[None, :] < K - k",
            ),
        ),
        absent=(NO_MASK,),
    ),
    wrong(
        "store_without_mask_over_several_lines",
        "mask",
        (OOB, "wrote outside `c_ptr`", "writes over memory outside", NO_STORE_MASK),
        edit(
            MATMUL,
            (
                "tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))",
                "tl.store(\n        c_ptrs,\n        acc,\n    )",
            ),
        ),
        absent=(BAD_MASK, "reads garbage", "this access has no mask"),
    ),
]

# A kernel that calls a @triton.jit helper, and an autotuned kernel, are compiled for a GPU too
# (issue 30.2): a leftover print of an f-string or a `break` runs in the interpreter only.
ADD_HELPER = """
@triton.jit
def _sum(a, b):
    return a + b


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, _sum(x, y), mask=mask)
"""
ADD_AUTOTUNED = """
@triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": 128}), triton.Config({"BLOCK_SIZE": 1024})],
    key=["n_elements"],
)
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
"""
ANSWERS["triton_vector_add"] += [
    right("calls_a_jit_helper", ADD_HELPER),
    right("autotuned", ADD_AUTOTUNED),
    wrong(
        "helper_and_leftover_print",
        "compile",
        ("rejects it for a GPU", 'line 13: `print(f"program {pid}")`'),
        edit(
            ADD_HELPER,
            ("    tl.store(", '    print(f"program {pid}")\n    tl.store('),
        ),
    ),
    wrong(
        "autotuned_with_break",
        "compile",
        ("rejects it for a GPU", "line 13: `break`"),
        edit(
            ADD_AUTOTUNED,
            ("    tl.store(", "    for i in range(2):\n        break\n    tl.store("),
        ),
    ),
]

# Mistakes named from what the checker observes (a per-row power of the variance, a vector
# indexed per program, the K blocks or key/vocabulary blocks that reach the result), of the
# same families as lab 12's held-out misses but not the same programs.
ANSWERS["triton_layernorm"] += [
    wrong(
        "never_divided_by_std",
        "formula",
        ("(var + eps)^(0)", "not divided by the standard deviation"),
        edit(LAYERNORM, ("rstd = 1.0 / tl.sqrt(var + eps)", "rstd = 1.0")),
    ),
    wrong(
        "fourth_root",
        "formula",
        ("(var + eps)^(-0.25)", "should be (var + eps)^(-1/2)"),
        edit(
            LAYERNORM,
            ("rstd = 1.0 / tl.sqrt(var + eps)", "rstd = 1.0 / tl.sqrt(tl.sqrt(var + eps))"),
        ),
    ),
    wrong(
        "bias_offset_per_row",
        "pointer",
        ("`b_ptr` (100 elements) at offsets 100 to 199", "one vector shared by every row"),
        edit(LAYERNORM, ("b = tl.load(b_ptr + cols", "b = tl.load(b_ptr + row * n_cols + cols")),
    ),
]
ANSWERS["triton_matmul"] += [
    wrong(
        "a_pointer_not_advanced",
        "pointer",
        ("a's first block", "`a_ptrs += BLOCK_K * stride_ak`"),
        edit(MATMUL, ("        a_ptrs += BLOCK_K * stride_ak\n", "")),
    ),
    wrong(
        "accumulator_overwritten",
        "formula",
        ("sum over K block 2 only", "K blocks 0-1 never reach the accumulator"),
        edit(MATMUL, ("acc += tl.dot(a, b)", "acc = tl.dot(a, b)")),
    ),
    wrong(
        "k_loop_floor",
        "mask",
        ("K block 2 never reaches", "The last block (k = 64) is skipped"),
        edit(
            MATMUL,
            (
                "for k in range(0, K, BLOCK_K):",
                "for k in range(0, K // BLOCK_K * BLOCK_K, BLOCK_K):",
            ),
        ),
    ),
]
ANSWERS["triton_matmul"] += [
    wrong(
        "k_loop_from_second_block",
        "formula",
        ("first 48 of K", "a K loop that does not start at 0"),
        edit(
            MATMUL,
            ("for k in range(0, K, BLOCK_K):", "for k in range(BLOCK_K, K, BLOCK_K):"),
        ),
    ),
]
ANSWERS["triton_flash_attention"] += [
    wrong(
        "first_key_block_only",
        "formula",
        ("rows 16-63 see keys 0-15 only", "only the first block of keys"),
        edit(
            ATTENTION,
            (
                "for start_n in range(0, end, BLOCK_N):",
                "for start_n in range(0, BLOCK_N, BLOCK_N):",
            ),
        ),
    ),
    wrong(
        "key_loop_floor",
        "mask",
        ("rows 0-49 see keys 0-47 only", "the last key block (keys 48-49)"),
        edit(
            ATTENTION,
            (
                "for start_n in range(0, end, BLOCK_N):",
                "for start_n in range(0, end // BLOCK_N * BLOCK_N, BLOCK_N):",
            ),
        ),
    ),
]
ANSWERS["triton_cross_entropy"] += [
    wrong(
        "vocab_loop_floor",
        "mask",
        ("columns 0-255 only", "starting at columns 256 never reach your loss"),
        edit(
            CROSS_ENTROPY,
            (
                "for v0 in range(0, vocab, BLOCK_V):",
                "for v0 in range(0, vocab // BLOCK_V * BLOCK_V, BLOCK_V):",
            ),
        ),
    ),
    wrong(
        "vocab_loop_skips_first",
        "formula",
        ("columns 64-299 only", "starting at columns 0 never reach your loss"),
        edit(
            CROSS_ENTROPY,
            ("for v0 in range(0, vocab, BLOCK_V):", "for v0 in range(BLOCK_V, vocab, BLOCK_V):"),
        ),
    ),
]
ANSWERS["triton_flash_attention"] += [
    wrong(
        "causal_end_by_block_n",
        "formula",
        ("rows 16-31 see keys 0-15 only", "stops at start_m + 16"),
        edit(
            ATTENTION,
            (
                "end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL",
                "end = tl.minimum(start_m + BLOCK_N, seq_len) if CAUSAL",
            ),
        ),
    ),
    wrong(
        "causal_start_at_own_block",
        "formula",
        ("see keys from 16 up to their own position only", "must start at key 0"),
        edit(
            ATTENTION,
            (
                "for start_n in range(0, end, BLOCK_N):",
                "for start_n in range(start_m if CAUSAL else 0, end, BLOCK_N):",
            ),
        ),
    ),
]
ANSWERS["triton_cross_entropy"] += [
    wrong(
        "target_picked_in_first_block_only",
        "formula",
        ("log-sum-exp is right", "outside vocabulary columns 0-63 (block 0)"),
        edit(
            CROSS_ENTROPY,
            (
                "picked += tl.sum(tl.where(cols[None, :] == target[:, None]",
                "picked += (v0 == 0) * tl.sum(tl.where(cols[None, :] == target[:, None]",
            ),
        ),
    ),
]

# Mistakes of the blind held2 answers' families (issue 30), each written as another program
# with the same mistake, named from what the checker observes or probes.
ANSWERS["triton_softmax"] += [
    wrong(
        "terms_before_max_update",
        "formula",
        ("every value you store is 0", "`tl.exp(x - m_new)`"),
        edit(
            SOFTMAX,
            (
                "        m_new = tl.maximum(m, tl.max(x, axis=0))\n"
                "        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)",
                "        terms = tl.exp(x - m)\n"
                "        m_new = tl.maximum(m, tl.max(x, axis=0))\n"
                "        s = s * tl.exp(m - m_new) + tl.sum(terms, axis=0)",
            ),
        ),
    ),
    wrong(
        "max_assigned_to_another_name",
        "formula",
        ("even in rows whose values lie far below", "never updated"),
        edit(SOFTMAX, ("        m = m_new\n", "        m_old = m_new\n")),
    ),
    wrong(
        "one_loop_writes_with_running_stats",
        "formula",
        ("blocks 0 to j only", "second loop"),
        """
        @triton.jit
        def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
            row = tl.program_id(0)
            m = -float("inf")
            s = 0.0
            for start in range(0, n_cols, BLOCK_SIZE):
                cols = start + tl.arange(0, BLOCK_SIZE)
                inside = cols < n_cols
                x = tl.load(x_ptr + row * x_row_stride + cols, mask=inside, other=-float("inf"))
                m_block = tl.maximum(m, tl.max(x, axis=0))
                s = s * tl.exp(m - m_block) + tl.sum(tl.exp(x - m_block), axis=0)
                m = m_block
                tl.store(out_ptr + row * out_row_stride + cols, tl.exp(x - m) / s, mask=inside)
        """,
    ),
    wrong(
        "output_exp_without_max",
        "formula",
        ("times exp(m)", "`tl.exp(x - m) / s`"),
        edit(SOFTMAX, ("tl.exp(x - m) / s, mask=mask)", "tl.exp(x) * (1.0 / s), mask=mask)")),
    ),
]
ANSWERS["triton_layernorm"] += [
    wrong(
        "scales_raw_x",
        "formula",
        ("the row's mean times rstd", "not x - mean"),
        edit(
            LAYERNORM,
            ("diff * rstd * w + b, mask=mask)", "x / tl.sqrt(var + eps) * w + b, mask=mask)"),
        ),
    ),
    wrong(
        "weight_loaded_from_bias",
        "formula",
        ("times b plus w", "swapped"),
        edit(
            LAYERNORM,
            ("w = tl.load(w_ptr + cols, mask=mask)", "w = tl.load(b_ptr + cols, mask=mask)"),
            ("b = tl.load(b_ptr + cols, mask=mask)", "b = tl.load(w_ptr + cols, mask=mask)"),
        ),
    ),
]
ANSWERS["triton_matmul"] += [
    wrong(
        "relu_keeps_negatives",
        "formula",
        ("min(a @ b, 0)", "`acc = tl.maximum(acc, 0.0)`"),
        edit(MATMUL, ("acc = tl.maximum(acc, 0.0)", "acc = tl.where(acc > 0, 0.0, acc)")),
    ),
    wrong(
        "a_read_transposed",
        "pointer",
        ("a^T @ b", "a's two strides are swapped"),
        edit(
            MATMUL,
            (
                "offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak",
                "offs_m[:, None] * stride_ak + offs_k[None, :] * stride_am",
            ),
            ("a_ptrs += BLOCK_K * stride_ak", "a_ptrs += BLOCK_K * stride_am"),
        ),
    ),
    wrong(
        "c_stored_transposed",
        "pointer",
        ("(a @ b)^T", "c's two strides are swapped"),
        edit(
            MATMUL,
            (
                "offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn",
                "offs_n[None, :] * stride_cm + offs_m[:, None] * stride_cn",
            ),
        ),
    ),
    wrong(
        "a_rows_move_with_k",
        "pointer",
        ("move down a's rows", "`a_ptrs += BLOCK_K * stride_ak`"),
        edit(
            MATMUL,
            (
                "        a = tl.load(a_ptrs,",
                "        a_ptrs = a_ptr + (offs_m[:, None] + k) * stride_am + offs_k[None, :] * stride_ak\n"
                "        a = tl.load(a_ptrs,",
            ),
        ),
    ),
    wrong(
        "rows_from_pid_n",
        "pointer",
        ("tile (i, i)", "the same program id"),
        edit(MATMUL, ("offs_m = pid_m * BLOCK_M", "offs_m = pid_n * BLOCK_M")),
    ),
]
ANSWERS["triton_flash_attention"] += [
    wrong(
        "scores_times_inverse_scale",
        "formula",
        ("is 1 / sm_scale", "divided by sm_scale"),
        edit(
            ATTENTION,
            (
                "s = tl.dot(q, tl.trans(k)) * sm_scale",
                "s = tl.dot(q, tl.trans(k)) * (1.0 / sm_scale)",
            ),
        ),
    ),
    wrong(
        "causal_keeps_later_keys",
        "formula",
        ("the other triangle",),
        edit(
            ATTENTION,
            ("(offs_m[:, None] >= offs_n[None, :])", "~(offs_n[None, :] < offs_m[:, None])"),
        ),
    ),
    wrong(
        "causal_mask_built_key_major",
        "formula",
        ("transposed inside each",),
        edit(
            ATTENTION,
            ("(offs_m[:, None] >= offs_n[None, :])", "(offs_m[None, :] >= offs_n[:, None])"),
        ),
    ),
    wrong(
        "p_taken_before_the_new_maximum",
        "formula",
        ("so is a probe with a single key block", "`tl.exp(s - m_new[:, None])`"),
        edit(
            ATTENTION,
            (
                "        m_new = tl.maximum(m_i, tl.max(s, axis=1))\n"
                "        p = tl.exp(s - m_new[:, None])",
                "        shifted = s - m_i[:, None]\n"
                "        m_new = tl.maximum(m_i, tl.max(s, axis=1))\n"
                "        p = tl.exp(shifted)",
            ),
        ),
    ),
    wrong(
        "both_rescaled_after_adding",
        "formula",
        ("acc and l_i are rescaled after the new block is added",),
        edit(
            ATTENTION,
            ("l_i = l_i * alpha + tl.sum(p, axis=1)", "l_i = (l_i + tl.sum(p, axis=1)) * alpha"),
            (
                "acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)",
                "acc = (acc + tl.dot(p.to(tl.float16), v)) * alpha[:, None]",
            ),
        ),
    ),
]
ANSWERS["triton_cross_entropy"] += [
    wrong(
        "loss_times_inverse_rows",
        "formula",
        ("divided by n_rows = 40", "not their mean"),
        edit(
            CROSS_ENTROPY,
            (
                "m + tl.log(s) - picked, mask=row_ok)",
                "(m + tl.log(s) - picked) * (1.0 / n_rows), mask=row_ok)",
            ),
        ),
    ),
    wrong(
        "sum_over_the_whole_tile",
        "formula",
        ("identical rows", "`tl.sum(..., axis=1)`"),
        edit(
            CROSS_ENTROPY,
            (
                "tl.sum(tl.exp(logits - m_new[:, None]), axis=1)",
                "tl.sum(tl.sum(tl.exp(logits - m_new[:, None]), axis=1), axis=0)",
            ),
        ),
    ),
]

# Operand errors named from the error's text and the learner's frame (issue 30, round 5): two
# `tl.dot` operands of different dtypes (in the interpreter, or only in the compiler), a 1-D
# block of one value per row taken as a row, and the target's logit computed in float16.
ANSWERS["triton_flash_attention"] += [
    wrong(
        "p_not_cast_before_dot",
        "formula",
        ("`p` is float32 and `v` is float16", "`p.to(tl.float16)`"),
        edit(ATTENTION, ("tl.dot(p.to(tl.float16), v)", "tl.dot(p, v)")),
    ),
    wrong(
        "q_scaled_before_dot",
        "formula",
        ("rejects it for a GPU", "`q` is float32 and", "`q.to(tl.float16)`"),
        edit(
            ATTENTION,
            (
                "    m_i = tl.full(",
                "    q = q * sm_scale\n    m_i = tl.full(",
            ),
            ("s = tl.dot(q, tl.trans(k)) * sm_scale", "s = tl.dot(q, tl.trans(k))"),
        ),
    ),
]
ANSWERS["triton_cross_entropy"] += [
    wrong(
        "max_subtracted_as_a_row",
        "formula",
        ("64 (BLOCK_V)", "16 (BLOCK_M)", "`m_new` has shape (16,)", "`[:, None]`"),
        edit(
            CROSS_ENTROPY,
            ("tl.exp(logits - m_new[:, None])", "tl.exp(logits - m_new)"),
        ),
    ),
    wrong(
        "target_compared_as_a_row",
        "formula",
        ("64 (BLOCK_V)", "16 (BLOCK_M)", "`target` has shape (16,)", "`[:, None]`"),
        edit(
            CROSS_ENTROPY,
            ("cols[None, :] == target[:, None]", "cols[None, :] == target[None, :]"),
        ),
    ),
    wrong(
        "target_logit_in_float16",
        "numerics",
        ("target's logit computed in float16", "float32"),
        edit(
            CROSS_ENTROPY,
            (
                "    m = tl.full(",
                "    w_t = tl.load(w_ptr + target[:, None] * stride_w + dims[None, :], "
                "mask=row_ok[:, None], other=0.0)\n"
                "    picked = tl.sum(h * w_t, axis=1)\n    m = tl.full(",
            ),
            ("    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)\n", ""),
            (
                "        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)\n",
                "",
            ),
        ),
    ),
]

# An access outside b attributed to the index that left it (round 5): a column mask that
# compares with M (or K) lets columns past N through; they run past b's last row.
ANSWERS["triton_matmul"] += [
    wrong(
        "b_columns_masked_with_m",
        "mask",
        ("owns b's columns 32-63", "column indices past N = 40", "`offs_n[None, :] < N`"),
        edit(MATMUL, ("(offs_n[None, :] < N), other", "(offs_n[None, :] < M), other")),
    ),
    wrong(
        "b_columns_masked_with_k",
        "mask",
        ("column indices past N = 40", "`offs_n[None, :] < N`"),
        edit(MATMUL, ("(offs_n[None, :] < N), other", "(offs_n[None, :] < K), other")),
    ),
]
ANSWERS["triton_cross_entropy"] += [
    wrong(
        "target_logit_picked_with_max",
        "numerics",
        ("exactly the rows whose target logit is negative",),
        edit(
            CROSS_ENTROPY,
            (
                "picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)",
                "picked += tl.max(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)",
            ),
        ),
    ),
]
