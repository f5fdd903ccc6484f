"""Lab 03 (first kernels): alternative correct kernels and known mistakes, as notebook cells."""

from . import right, wrong

GUARD = "guard the work with `if i < out.size:`"  # the hint for a missing guard: never elsewhere

ANSWERS = {
    "vector_add": [
        right(
            "grid_stride",
            """
            @cuda.jit
            def vector_add(a, b, out):
                for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
                    out[i] = a[i] + b[i]
            """,
        ),
        right(
            "explicit_index_early_return",
            """
            @cuda.jit
            def vector_add(a, b, out):
                i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
                if i >= a.size:
                    return
                out[i] = b[i] + a[i]
            """,
        ),
        wrong(
            "no_guard",
            "guard",
            ("valid indices are 0 to", GUARD),
            """
            @cuda.jit
            def vector_add(a, b, out):
                i = cuda.grid(1)
                out[i] = a[i] + b[i]
            """,
        ),
        wrong(
            "guard_one_short",
            "guard",
            "the guard is one short",
            """
            @cuda.jit
            def vector_add(a, b, out):
                i = cuda.grid(1)
                if i < out.size - 1:
                    out[i] = a[i] + b[i]
            """,
        ),
        wrong(
            "thread_index_only",
            "index",
            ("cuda.grid(1)", "write-write race on out[0]", "not an atomic operation"),
            """
            @cuda.jit
            def vector_add(a, b, out):
                i = cuda.threadIdx.x
                if i < out.size:
                    out[i] = a[i] + b[i]
            """,
        ),
        wrong(
            "subtracts",
            "pattern",
            "your output equals a - b",
            """
            @cuda.jit
            def vector_add(a, b, out):
                i = cuda.grid(1)
                if i < out.size:
                    out[i] = a[i] - b[i]
            """,
        ),
        wrong(
            "a_twice",
            "pattern",
            "you used `a` twice",
            """
            @cuda.jit
            def vector_add(a, b, out):
                i = cuda.grid(1)
                if i < out.size:
                    out[i] = a[i] + a[i]
            """,
        ),
        wrong(
            "typo_gird",
            "typo",
            ("AttributeError", "cuda.gird", "line 3"),
            """
            @cuda.jit
            def vector_add(a, b, out):
                i = cuda.gird(1)
                if i < out.size:
                    out[i] = a[i] + b[i]
            """,
            absent=(GUARD,),
        ),
        wrong(
            "saxpy_instead",
            "signature",
            "vector_add(a, b, out)",
            """
            @cuda.jit
            def saxpy(a, x, y, out):
                i = cuda.grid(1)
                if i < out.size:
                    out[i] = a * x[i] + y[i]
            """,
            absent=(GUARD,),
        ),
        wrong(
            "adds_into_a",
            "writes-input",
            "`a`",
            """
            @cuda.jit
            def vector_add(a, b, out):
                i = cuda.grid(1)
                if i < out.size:
                    a[i] += b[i]
                    out[i] = a[i]
            """,
            absent=("grid-stride",),
        ),
        wrong(
            "returns_the_sum",
            "writes-nothing",
            "nothing",
            """
            @cuda.jit
            def vector_add(a, b, out):
                i = cuda.grid(1)
                if i < out.size:
                    return a[i] + b[i]
            """,
            absent=("one short",),
        ),
        wrong(
            "device_function",
            "not-a-kernel",
            "device function",
            """
            @cuda.jit(device=True)
            def vector_add(a, b, out):
                i = cuda.grid(1)
                if i < out.size:
                    out[i] = a[i] + b[i]
            """,
        ),
    ],
    "matmul_naive": [
        right(
            "explicit_indices_early_return",
            """
            @cuda.jit
            def matmul_naive(a, b, out):
                row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
                col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
                if row >= out.shape[0] or col >= out.shape[1]:
                    return
                acc = float32(0.0)
                k = 0
                while k < a.shape[1]:
                    acc += a[row, k] * b[k, col]
                    k += 1
                out[row, col] = acc
            """,
        ),
        right(
            "grid_stride_2d",
            """
            @cuda.jit
            def matmul_naive(a, b, out):
                x0, y0 = cuda.grid(2)
                sx, sy = cuda.gridsize(2)
                for row in range(y0, out.shape[0], sy):
                    for col in range(x0, out.shape[1], sx):
                        acc = 0.0
                        for k in range(a.shape[1] - 1, -1, -1):  # summed from the end
                            acc += a[row, k] * b[k, col]
                        out[row, col] = acc
            """,
        ),
        wrong(
            "swapped_indices",
            "index",
            "`col, row = cuda.grid(2)`",
            """
            @cuda.jit
            def matmul_naive(a, b, out):
                row, col = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    total = 0.0
                    for k in range(a.shape[1]):
                        total += a[row, k] * b[k, col]
                    out[row, col] = total
            """,
        ),
        wrong(
            "accumulates_into_out",
            "pattern",
            "Accumulate in a local variable",
            """
            @cuda.jit
            def matmul_naive(a, b, out):
                col, row = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    for k in range(a.shape[1]):
                        out[row, col] += a[row, k] * b[k, col]
            """,
        ),
        wrong(
            "no_guard",
            "guard",
            "if row < out.shape[0] and col < out.shape[1]:",
            """
            @cuda.jit
            def matmul_naive(a, b, out):
                col, row = cuda.grid(2)
                total = 0.0
                for k in range(a.shape[1]):
                    total += a[row, k] * b[k, col]
                out[row, col] = total
            """,
        ),
        wrong(
            "loops_over_n",
            "index",
            "an index ran past K",
            """
            @cuda.jit
            def matmul_naive(a, b, out):
                col, row = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    total = 0.0
                    for k in range(out.shape[1]):  # N terms instead of K
                        total += a[row, k] * b[k, col]
                    out[row, col] = total
            """,
        ),
        wrong(
            "too_few_terms",
            "pattern",
            "each element sums 12 products instead of 24",
            """
            @cuda.jit
            def matmul_naive(a, b, out):
                col, row = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    total = 0.0
                    for k in range(min(out.shape[0], a.shape[1])):  # M terms where K is larger
                        total += a[row, k] * b[k, col]
                    out[row, col] = total
            """,
        ),
        wrong(
            "b_transposed",
            "pattern",
            "you used b[col, k]",
            """
            @cuda.jit
            def matmul_naive(a, b, out):
                col, row = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    total = 0.0
                    for k in range(a.shape[1]):
                        total += a[row, k] * b[col, k]
                    out[row, col] = total
            """,
        ),
        wrong(
            "undefined_K",
            "typo",
            ("NameError", "line 6"),
            """
            @cuda.jit
            def matmul_naive(a, b, out):
                col, row = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    total = 0.0
                    for k in range(K):
                        total += a[row, k] * b[k, col]
                    out[row, col] = total
            """,
            absent=("guard the work",),
        ),
    ],
    "sum_atomic": [
        right(
            "early_return",
            """
            @cuda.jit
            def sum_atomic(x, out):
                i = cuda.grid(1)
                if i >= x.shape[0]:
                    return
                cuda.atomic.add(out, 0, x[i])
            """,
        ),
        right(
            "grid_stride_then_one_atomic",
            """
            @cuda.jit
            def sum_atomic(x, out):
                total = float32(0.0)
                for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
                    total += x[i]
                cuda.atomic.add(out, 0, total)
            """,
        ),
        wrong(
            "assigns",
            "race",
            "`out[0] = x[i]` overwrites",
            """
            @cuda.jit
            def sum_atomic(x, out):
                i = cuda.grid(1)
                if i < x.size:
                    out[0] = x[i]
            """,
        ),
        wrong(
            "plain_add",
            "race",
            # the simulator may or may not lose updates: either the trace names the race, or
            # the total is off; both messages name the race and the atomic
            ("race", "cuda.atomic.add(out, 0, "),
            """
            @cuda.jit
            def sum_atomic(x, out):
                i = cuda.grid(1)
                if i < x.size:
                    out[0] += x[i]
            """,
        ),
        wrong(
            "thread_index_only",
            "index",
            "every block added the same first elements",
            """
            @cuda.jit
            def sum_atomic(x, out):
                i = cuda.threadIdx.x
                if i < x.size:
                    cuda.atomic.add(out, 0, x[i])
            """,
        ),
        wrong(
            "no_guard",
            "guard",
            "if i < x.size:",
            """
            @cuda.jit
            def sum_atomic(x, out):
                cuda.atomic.add(out, 0, x[cuda.grid(1)])
            """,
        ),
        wrong(
            "adds_x0",
            "pattern",
            "you added x[0] every time",
            """
            @cuda.jit
            def sum_atomic(x, out):
                i = cuda.grid(1)
                if i < x.size:
                    cuda.atomic.add(out, 0, x[0])
            """,
        ),
        wrong(
            "atomic_at_i",
            "index",
            ("`out` has a single element", "cuda.atomic.add(out, 0, x[i])"),
            """
            @cuda.jit
            def sum_atomic(x, out):
                i = cuda.grid(1)
                if i < x.size:
                    cuda.atomic.add(out, i, x[i])
            """,
            absent=("if i < x.size:`",),
        ),
        wrong(
            "typo_atomic_ad",
            "typo",
            ("AttributeError", "atomic.ad", "line 5"),
            """
            @cuda.jit
            def sum_atomic(x, out):
                i = cuda.grid(1)
                if i < x.size:
                    cuda.atomic.ad(out, 0, x[i])
            """,
            absent=("guard the work",),
        ),
    ],
    "saxpy": [
        right(
            "explicit_index_reordered",
            """
            @cuda.jit
            def saxpy(a, x, y, out):
                i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
                if i < x.shape[0]:
                    out[i] = y[i] + x[i] * a
            """,
        ),
        right(
            "grid_stride_while",
            """
            @cuda.jit
            def saxpy(alpha, xs, ys, result):
                i = cuda.grid(1)
                while i < result.size:
                    result[i] = alpha * xs[i] + ys[i]
                    i += cuda.gridsize(1)
            """,
        ),
        wrong(
            "forgets_a",
            "pattern",
            "equals x + y; you left out the factor",
            """
            @cuda.jit
            def saxpy(a, x, y, out):
                i = cuda.grid(1)
                if i < out.size:
                    out[i] = x[i] + y[i]
            """,
        ),
        wrong(
            "scales_both",
            "pattern",
            "only x is scaled",
            """
            @cuda.jit
            def saxpy(a, x, y, out):
                i = cuda.grid(1)
                if i < out.size:
                    out[i] = a * (x[i] + y[i])
            """,
        ),
        wrong(
            "scales_y",
            "pattern",
            "you scaled y instead of x",
            """
            @cuda.jit
            def saxpy(a, x, y, out):
                i = cuda.grid(1)
                if i < out.size:
                    out[i] = a * y[i] + x[i]
            """,
        ),
        wrong(
            "no_guard",
            "guard",
            GUARD,
            """
            @cuda.jit
            def saxpy(a, x, y, out):
                i = cuda.grid(1)
                out[i] = a * x[i] + y[i]
            """,
        ),
        wrong(
            "vector_add_instead",
            "signature",
            "saxpy(a, x, y, out)",
            """
            @cuda.jit
            def vector_add(a, b, out):
                i = cuda.grid(1)
                if i < out.size:
                    out[i] = a[i] + b[i]
            """,
            absent=(GUARD,),
        ),
        wrong(
            "updates_y_in_place",
            "writes-input",
            "`y`",
            """
            @cuda.jit
            def saxpy(a, x, y, out):
                i = cuda.grid(1)
                if i < out.size:
                    y[i] = a * x[i] + y[i]
                    out[i] = y[i]
            """,
        ),
    ],
    "clamp": [
        right(
            "min_max",
            """
            @cuda.jit
            def clamp(x, lo, hi, out):
                i = cuda.grid(1)
                if i < x.size:
                    out[i] = min(max(x[i], lo), hi)
            """,
        ),
        right(
            "two_ifs_on_a_local",
            """
            @cuda.jit
            def clamp(x, lo, hi, out):
                for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
                    v = x[i]
                    if v > hi:
                        v = hi
                    if v < lo:
                        v = lo
                    out[i] = v
            """,
        ),
        wrong(
            "no_else",
            "pattern",
            "`else: out[i] = x[i]`",
            """
            @cuda.jit
            def clamp(x, lo, hi, out):
                i = cuda.grid(1)
                if i < x.size:
                    if x[i] < lo:
                        out[i] = lo
                    elif x[i] > hi:
                        out[i] = hi
            """,
        ),
        wrong(
            "nested_wrong_way",
            "pattern",
            "lo everywhere; min and max are nested the wrong way round",
            """
            @cuda.jit
            def clamp(x, lo, hi, out):
                i = cuda.grid(1)
                if i < x.size:
                    out[i] = min(max(x[i], hi), lo)
            """,
        ),
        wrong(
            "lower_bound_only",
            "pattern",
            "values above hi must become hi",
            """
            @cuda.jit
            def clamp(x, lo, hi, out):
                i = cuda.grid(1)
                if i < x.size:
                    out[i] = max(x[i], lo)
            """,
        ),
        wrong(
            "bounds_swapped",
            "pattern",
            "lo and hi are swapped",
            """
            @cuda.jit
            def clamp(x, lo, hi, out):
                i = cuda.grid(1)
                if i < x.size:
                    v = x[i]
                    if v < lo:
                        v = hi
                    elif v > hi:
                        v = lo
                    out[i] = v
            """,
        ),
        wrong(
            "guard_one_short",
            "guard",
            "the guard is one short",
            """
            @cuda.jit
            def clamp(x, lo, hi, out):
                i = cuda.grid(1)
                if i < x.size - 1:
                    out[i] = min(max(x[i], lo), hi)
            """,
        ),
        wrong(
            "clamps_x_in_place",
            "writes-input",
            "`x`",
            """
            @cuda.jit
            def clamp(x, lo, hi, out):
                i = cuda.grid(1)
                if i < x.size:
                    x[i] = min(max(x[i], lo), hi)
                    out[i] = x[i]
            """,
        ),
        wrong(
            "fstring_print",
            "not-a-kernel",
            ("compile", "line 5"),
            """
            @cuda.jit
            def clamp(x, lo, hi, out):
                i = cuda.grid(1)
                if i == 0:
                    print(f"clamping to [{lo}, {hi}]")
                if i < x.size:
                    out[i] = min(max(x[i], lo), hi)
            """,
        ),
    ],
    "stencil_1d": [
        right(
            "loop_over_offsets",
            """
            @cuda.jit
            def stencil_1d(x, out):
                i = cuda.grid(1)
                n = x.shape[0]
                if i >= n:
                    return
                total = 0.0
                for offset in range(-1, 2):
                    j = i + offset
                    if 0 <= j < n:
                        total += x[j]
                out[i] = total / 3.0
            """,
        ),
        right(
            "grid_stride_with_ifs",
            """
            @cuda.jit
            def stencil_1d(x, out):
                for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
                    total = x[i]
                    if i > 0:
                        total += x[i - 1]
                    if i < x.size - 1:
                        total += x[i + 1]
                    out[i] = total / 3
            """,
        ),
        wrong(
            "no_right_boundary",
            "guard",
            ("thread 199", "read its right neighbour x[200], past the end"),
            """
            @cuda.jit
            def stencil_1d(x, out):
                i = cuda.grid(1)
                if i < x.size:
                    left = x[i - 1] if i > 0 else 0.0
                    out[i] = (left + x[i] + x[i + 1]) / 3
            """,
            absent=("extra thread",),
        ),
        wrong(
            "wraps_left",
            "pattern",
            "out[0] used x[-1]",
            """
            @cuda.jit
            def stencil_1d(x, out):
                i = cuda.grid(1)
                if i < x.size:
                    right = x[i + 1] if i + 1 < x.size else 0.0
                    out[i] = (x[i - 1] + x[i] + right) / 3
            """,
        ),
        wrong(
            "skips_ends",
            "guard",
            "the first and last elements were never written",
            """
            @cuda.jit
            def stencil_1d(x, out):
                i = cuda.grid(1)
                if 0 < i < x.size - 1:
                    out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3
            """,
        ),
        wrong(
            "averages_what_exists",
            "pattern",
            "you averaged the two values that exist",
            """
            @cuda.jit
            def stencil_1d(x, out):
                i = cuda.grid(1)
                n = x.size
                if i < n:
                    if i == 0:
                        out[i] = (x[0] + x[1]) / 2 if n > 1 else x[0]
                    elif i == n - 1:
                        out[i] = (x[i - 1] + x[i]) / 2
                    else:
                        out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3
            """,
        ),
        wrong(
            "not_centred",
            "pattern",
            "centre the stencil on i",
            """
            @cuda.jit
            def stencil_1d(x, out):
                i = cuda.grid(1)
                n = x.size
                if i < n:
                    a = x[i + 1] if i + 1 < n else 0.0
                    b = x[i + 2] if i + 2 < n else 0.0
                    out[i] = (x[i] + a + b) / 3
            """,
        ),
        wrong(
            "not_divided",
            "pattern",
            "divide the sum by 3",
            """
            @cuda.jit
            def stencil_1d(x, out):
                i = cuda.grid(1)
                n = x.size
                if i < n:
                    left = x[i - 1] if i > 0 else 0.0
                    right = x[i + 1] if i + 1 < n else 0.0
                    out[i] = left + x[i] + right
            """,
        ),
        wrong(
            "no_guard",
            "guard",
            "guard the work with `if i < x.size:`",
            """
            @cuda.jit
            def stencil_1d(x, out):
                i = cuda.grid(1)
                left = x[i - 1] if i > 0 else 0.0
                right = x[i + 1] if i + 1 < x.size else 0.0
                out[i] = (left + x[i] + right) / 3
            """,
        ),
        wrong(
            "thread_index_only",
            "index",
            ("only the first block's elements were written", "cuda.grid(1)"),
            """
            @cuda.jit
            def stencil_1d(x, out):
                i = cuda.threadIdx.x
                n = x.size
                if i < n:
                    left = x[i - 1] if i > 0 else 0.0
                    right = x[i + 1] if i + 1 < n else 0.0
                    out[i] = (left + x[i] + right) / 3
            """,
        ),
        wrong(
            "smooths_x_in_place",
            "writes-input",
            ("changed its input `x`", "only read"),
            """
            @cuda.jit
            def stencil_1d(x, out):
                i = cuda.grid(1)
                n = x.size
                if i < n:
                    left = x[i - 1] if i > 0 else 0.0
                    right = x[i + 1] if i + 1 < n else 0.0
                    x[i] = (left + x[i] + right) / 3
                    out[i] = x[i]
            """,
        ),
    ],
    "square_grid_stride": [
        right(
            "while_loop",
            """
            @cuda.jit
            def square_grid_stride(x, out):
                i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
                step = cuda.blockDim.x * cuda.gridDim.x
                while i < out.shape[0]:
                    v = x[i]
                    out[i] = v * v
                    i += step
            """,
        ),
        right(
            "passes_of_the_whole_grid",
            """
            @cuda.jit
            def square_grid_stride(x, out):
                for base in range(0, x.size, cuda.gridsize(1)):
                    i = base + cuda.grid(1)
                    if i < x.size:
                        out[i] = x[i] ** 2
            """,
        ),
        wrong(
            "no_loop",
            "index",
            "only the first 128 elements were written, one per thread",
            """
            @cuda.jit
            def square_grid_stride(x, out):
                i = cuda.grid(1)
                if i < x.size:
                    out[i] = x[i] * x[i]
            """,
        ),
        wrong(
            "starts_at_thread_index",
            "index",
            "the loop starts at cuda.threadIdx.x",
            """
            @cuda.jit
            def square_grid_stride(x, out):
                for i in range(cuda.threadIdx.x, x.size, cuda.gridsize(1)):
                    out[i] = x[i] * x[i]
            """,
        ),
        wrong(
            "starts_at_zero",
            "index",
            "every thread started at element 0",
            """
            @cuda.jit
            def square_grid_stride(x, out):
                for i in range(0, x.size, cuda.gridsize(1)):
                    out[i] = x[i] * x[i]
            """,
        ),
        wrong(
            "stops_one_short",
            "guard",
            "loop up to x.size, not x.size - 1",
            """
            @cuda.jit
            def square_grid_stride(x, out):
                for i in range(cuda.grid(1), x.size - 1, cuda.gridsize(1)):
                    out[i] = x[i] * x[i]
            """,
        ),
        wrong(
            "steps_by_block_size",
            "race",
            ("your results came out right, but your kernel has a race", "write-write race on out["),
            """
            @cuda.jit
            def square_grid_stride(x, out):
                for i in range(cuda.grid(1), x.size, cuda.blockDim.x):
                    out[i] = x[i] * x[i]
            """,
        ),
        wrong(
            "doubles",
            "pattern",
            "your output is 2 * x",
            """
            @cuda.jit
            def square_grid_stride(x, out):
                for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
                    out[i] = x[i] * 2
            """,
        ),
        wrong(
            "float_chunk",
            "exception",
            ("TypeError", "line 5", "`//`"),
            """
            @cuda.jit
            def square_grid_stride(x, out):
                chunk = x.size / cuda.gridsize(1)
                start = cuda.grid(1) * chunk
                for i in range(start, min(start + chunk, x.size)):
                    out[i] = x[i] * x[i]
            """,
            absent=("loop only while i < x.size",),
        ),
    ],
    "add_bias_2d": [
        right(
            "explicit_indices_early_return",
            """
            @cuda.jit
            def add_bias_2d(x, bias, out):
                col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
                row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
                if row >= x.shape[0] or col >= x.shape[1]:
                    return
                out[row, col] = bias[col] + x[row, col]
            """,
        ),
        right(
            "grid_stride_2d",
            """
            @cuda.jit
            def add_bias_2d(x, bias, out):
                col0, row0 = cuda.grid(2)
                cols, rows = cuda.gridsize(2)
                for row in range(row0, out.shape[0], rows):
                    for col in range(col0, out.shape[1], cols):
                        out[row, col] = x[row, col] + bias[col]
            """,
        ),
        wrong(
            "swapped_indices",
            "index",
            "`col, row = cuda.grid(2)`",
            """
            @cuda.jit
            def add_bias_2d(x, bias, out):
                row, col = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    out[row, col] = x[row, col] + bias[col]
            """,
        ),
        wrong(
            "bias_per_row",
            "index",
            "you added bias[row]",
            """
            @cuda.jit
            def add_bias_2d(x, bias, out):
                col, row = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    out[row, col] = x[row, col] + bias[row]
            """,
        ),
        wrong(
            "no_guard",
            "guard",
            "if row < out.shape[0] and col < out.shape[1]:",
            """
            @cuda.jit
            def add_bias_2d(x, bias, out):
                col, row = cuda.grid(2)
                out[row, col] = x[row, col] + bias[col]
            """,
        ),
        wrong(
            "bias_forgotten",
            "pattern",
            "you forgot the bias",
            """
            @cuda.jit
            def add_bias_2d(x, bias, out):
                col, row = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    out[row, col] = x[row, col]
            """,
        ),
        wrong(
            "adds_into_x",
            "writes-input",
            "`x`",
            """
            @cuda.jit
            def add_bias_2d(x, bias, out):
                col, row = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    x[row, col] += bias[col]
                    out[row, col] = x[row, col]
            """,
        ),
        wrong(
            "undefined_column",
            "typo",
            ("NameError", "`column`", "line 5"),
            """
            @cuda.jit
            def add_bias_2d(x, bias, out):
                col, row = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    out[row, col] = x[row, col] + bias[column]
            """,
            absent=("guard the work",),
        ),
    ],
    "row_sums": [
        right(
            "grid_stride_from_the_end",
            """
            @cuda.jit
            def row_sums(x, out):
                for row in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
                    total = 0.0
                    for k in range(x.shape[1] - 1, -1, -1):
                        total += x[row, k]
                    out[row] = total
            """,
        ),
        right(
            "while_loop_float32",
            """
            @cuda.jit
            def row_sums(x, out):
                row = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
                if row < out.size:
                    total = float32(0.0)
                    col = 0
                    while col < x.shape[1]:
                        total += x[row, col]
                        col += 1
                    out[row] = total
            """,
        ),
        wrong(
            "sums_into_out",
            "pattern",
            "Sum into a local variable",
            """
            @cuda.jit
            def row_sums(x, out):
                row = cuda.grid(1)
                if row < x.shape[0]:
                    for col in range(x.shape[1]):
                        out[row] += x[row, col]
            """,
        ),
        wrong(
            "loops_over_rows",
            "index",
            "an index ran past the 7 columns of x",
            """
            @cuda.jit
            def row_sums(x, out):
                row = cuda.grid(1)
                if row < x.shape[0]:
                    total = 0.0
                    for col in range(x.shape[0]):
                        total += x[row, col]
                    out[row] = total
            """,
        ),
        wrong(
            "skips_first_column",
            "pattern",
            "each sum misses the first column",
            """
            @cuda.jit
            def row_sums(x, out):
                row = cuda.grid(1)
                if row < x.shape[0]:
                    total = 0.0
                    for col in range(1, x.shape[1]):
                        total += x[row, col]
                    out[row] = total
            """,
        ),
        wrong(
            "misses_last_column",
            "pattern",
            "each sum misses the last column",
            """
            @cuda.jit
            def row_sums(x, out):
                row = cuda.grid(1)
                if row < x.shape[0]:
                    total = 0.0
                    for col in range(x.shape[1] - 1):
                        total += x[row, col]
                    out[row] = total
            """,
        ),
        wrong(
            "no_guard",
            "guard",
            "if row < x.shape[0]:",
            """
            @cuda.jit
            def row_sums(x, out):
                row = cuda.grid(1)
                total = 0.0
                for col in range(x.shape[1]):
                    total += x[row, col]
                out[row] = total
            """,
        ),
        wrong(
            "device_function",
            "not-a-kernel",
            "device function",
            """
            @cuda.jit(device=True)
            def row_sums(x, out):
                row = cuda.grid(1)
                if row < x.shape[0]:
                    total = 0.0
                    for col in range(x.shape[1]):
                        total += x[row, col]
                    out[row] = total
            """,
        ),
    ],
}
