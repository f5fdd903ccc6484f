"""Lab 06 (matrix multiplication): alternative correct kernels and known mistakes, as notebook
cells (races and extra global traffic are found by the trace)."""

from . import right, wrong

CONSTANTS = {"TILE": 8}


def _tiled(
    load: str,
    inner: str = "acc += a_tile[ty, k] * b_tile[k, tx]",
    loop: str = "",
    sync1=True,
    sync2=True,
):
    """A matmul_tiled cell with its tile loads, inner product and barriers given."""
    loop = loop or "for k0 in range(0, k_total, TILE):"
    first = "        cuda.syncthreads()\n" if sync1 else ""
    second = "        cuda.syncthreads()\n" if sync2 else ""
    return f"""
@cuda.jit
def matmul_tiled(a, b, out):
    a_tile = cuda.shared.array((TILE, TILE), float32)
    b_tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.grid(2)
    m, k_total = a.shape
    n = b.shape[1]
    acc = float32(0.0)
    {loop}
{load}
{first}        for k in range(TILE):
            {inner}
{second}    if row < m and col < n:
        out[row, col] = acc
"""


_ZERO_FILLED = """\
        a_tile[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k_total else 0.0
        b_tile[ty, tx] = b[k0 + ty, col] if k0 + ty < k_total and col < n else 0.0"""


def _register(body_loads: str, second_sync: bool = True, a_rows: int = 16):
    """A matmul_register_tiled cell (2x2 outputs per thread, rows ty and ty + 8)."""
    second = "        cuda.syncthreads()\n" if second_sync else ""
    return f"""
@cuda.jit
def matmul_register_tiled(a, b, out):
    a_tile = cuda.shared.array(({a_rows}, 8), float32)
    b_tile = cuda.shared.array((8, 16), float32)
    acc = cuda.local.array((2, 2), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tid = ty * 8 + tx
    row0, col0 = cuda.blockIdx.y * 16, cuda.blockIdx.x * 16
    m, kk = a.shape
    n = b.shape[1]
    for i in range(2):
        for j in range(2):
            acc[i, j] = 0.0
    for k0 in range(0, kk, 8):
        for e in range(tid, 128, 64):
{body_loads}
        cuda.syncthreads()
        for k in range(8):
            for i in range(2):
                for j in range(2):
                    acc[i, j] += a_tile[ty + 8 * i, k] * b_tile[k, tx + 8 * j]
{second}    for i in range(2):
        for j in range(2):
            row, col = row0 + ty + 8 * i, col0 + tx + 8 * j
            if row < m and col < n:
                out[row, col] = acc[i, j]
"""


_REGISTER_LOADS = """\
            r, c = e // 8, e % 8
            a_tile[r, c] = a[row0 + r, k0 + c] if row0 + r < m and k0 + c < kk else 0.0
            r, c = e // 16, e % 16
            b_tile[r, c] = b[k0 + r, col0 + c] if k0 + r < kk and col0 + c < n else 0.0"""

_MATVEC_HEAD = """
@cuda.jit
def matvec_warp(a, x, y):
    row = cuda.blockIdx.x * 2 + cuda.threadIdx.x // 32
    lane = cuda.threadIdx.x % 32
"""

ANSWERS = {
    "matmul_tiled": [
        right(
            "explicit_indices_if_else",
            """
            @cuda.jit
            def matmul_tiled(lhs, rhs, result):
                sa = cuda.shared.array((TILE, TILE), float32)
                sb = cuda.shared.array((TILE, TILE), float32)
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                row = cuda.blockIdx.y * TILE + ty
                col = cuda.blockIdx.x * TILE + tx
                total = float32(0.0)
                steps = (lhs.shape[1] + TILE - 1) // TILE
                for step in range(steps):
                    k = step * TILE
                    if row < lhs.shape[0] and k + tx < lhs.shape[1]:
                        sa[ty, tx] = lhs[row, k + tx]
                    else:
                        sa[ty, tx] = 0.0
                    if k + ty < rhs.shape[0] and col < rhs.shape[1]:
                        sb[ty, tx] = rhs[k + ty, col]
                    else:
                        sb[ty, tx] = 0.0
                    cuda.syncthreads()
                    for j in range(TILE):
                        total += sa[ty, j] * sb[j, tx]
                    cuda.syncthreads()
                if row < result.shape[0] and col < result.shape[1]:
                    result[row, col] = total
            """,
        ),
        right(
            "while_loop_two_accumulators",
            """
            @cuda.jit
            def matmul_tiled(a, b, out):
                a_tile = cuda.shared.array((8, 8), float32)
                b_tile = cuda.shared.array((8, 8), float32)
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                col, row = cuda.grid(2)
                even = float32(0.0)
                odd = float32(0.0)
                k0 = 0
                while k0 < a.shape[1]:
                    inside_a = row < a.shape[0] and k0 + tx < a.shape[1]
                    a_tile[ty, tx] = a[row, k0 + tx] if inside_a else 0.0
                    inside_b = k0 + ty < b.shape[0] and col < b.shape[1]
                    b_tile[ty, tx] = b[k0 + ty, col] if inside_b else 0.0
                    cuda.syncthreads()
                    for k in range(0, 8, 2):
                        even += a_tile[ty, k] * b_tile[k, tx]
                        odd += a_tile[ty, k + 1] * b_tile[k + 1, tx]
                    cuda.syncthreads()
                    k0 += 8
                if row < out.shape[0] and col < out.shape[1]:
                    out[row, col] = even + odd
            """,
        ),
        wrong(
            "no_first_sync",
            "race",
            ("race", "cuda.syncthreads()"),
            _tiled(_ZERO_FILLED, sync1=False),
            absent=("cuda.syncwarp()",),
        ),
        wrong(
            "no_second_sync",
            "race",
            ("race", "cuda.syncthreads()"),
            _tiled(_ZERO_FILLED, sync2=False),
            absent=("cuda.syncwarp()",),
        ),
        wrong(
            "no_zero_fill",
            "pattern",
            ("K = 11 is not a multiple of 8", "load 0.0"),
            _tiled(
                """\
        if row < m and k0 + tx < k_total:
            a_tile[ty, tx] = a[row, k0 + tx]
        if k0 + ty < k_total and col < n:
            b_tile[ty, tx] = b[k0 + ty, col]"""
            ),
        ),
        wrong(
            "no_guard",
            "guard",
            ("valid indices are", "store 0.0 instead of reading"),
            _tiled(
                """\
        a_tile[ty, tx] = a[row, k0 + tx]
        b_tile[ty, tx] = b[k0 + ty, col]"""
            ),
        ),
        wrong(
            "one_thread_per_output",
            "efficiency",
            ("loaded 8,192 values", "ONE element of a"),
            """
            @cuda.jit
            def matmul_tiled(a, b, out):
                col, row = cuda.grid(2)
                if row < out.shape[0] and col < out.shape[1]:
                    acc = 0.0
                    for k in range(a.shape[1]):
                        acc += a[row, k] * b[k, col]
                    out[row, col] = acc
            """,
        ),
        wrong(
            "tiles_transposed",
            "efficiency",
            ("bank conflicts", "store each tile the way"),
            _tiled(
                """\
        a_tile[tx, ty] = a[row, k0 + tx] if row < m and k0 + tx < k_total else 0.0
        b_tile[tx, ty] = b[k0 + ty, col] if k0 + ty < k_total and col < n else 0.0""",
                inner="acc += a_tile[k, ty] * b_tile[tx, k]",
            ),
        ),
        wrong(
            "whole_tiles_only",
            "pattern",
            "only the first 8 of K = 11 terms were summed",
            _tiled(_ZERO_FILLED, loop="for k0 in range(0, k_total - TILE + 1, TILE):"),
            absent=("load 0.0",),
        ),
        wrong(
            "a_tile_rows_and_cols_mixed",
            "pattern",
            ("should be the dot product of row", "`acc += a_tile[ty, k] * b_tile[k, tx]`"),
            _tiled(_ZERO_FILLED, inner="acc += a_tile[k, ty] * b_tile[k, tx]"),
            absent=("load 0.0",),
        ),
        wrong(
            "typo_syncthread",
            "typo",
            ("`cuda.syncthread` does not exist", "`cuda.syncthreads`"),
            _tiled(_ZERO_FILLED).replace(
                "        cuda.syncthreads()\n        for k",
                "        cuda.syncthread()\n        for k",
            ),
        ),
    ],
    "matmul_register_tiled": [
        right(
            "adjacent_outputs_scalars",
            """
            @cuda.jit
            def matmul_register_tiled(a, b, out):
                a_tile = cuda.shared.array((16, 8), float32)
                b_tile = cuda.shared.array((8, 16), float32)
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                row0, col0 = cuda.blockIdx.y * 16, cuda.blockIdx.x * 16
                m, kk = a.shape
                n = b.shape[1]
                c00 = c01 = c10 = c11 = float32(0.0)
                for k0 in range(0, kk, 8):
                    for r in range(2):
                        row, k = row0 + 2 * ty + r, k0 + tx
                        a_tile[2 * ty + r, tx] = a[row, k] if row < m and k < kk else 0.0
                        k, col = k0 + ty, col0 + 2 * tx + r
                        b_tile[ty, 2 * tx + r] = b[k, col] if k < kk and col < n else 0.0
                    cuda.syncthreads()
                    for k in range(8):
                        a0, a1 = a_tile[2 * ty, k], a_tile[2 * ty + 1, k]
                        b0, b1 = b_tile[k, 2 * tx], b_tile[k, 2 * tx + 1]
                        c00 += a0 * b0
                        c01 += a0 * b1
                        c10 += a1 * b0
                        c11 += a1 * b1
                    cuda.syncthreads()
                r0, c0 = row0 + 2 * ty, col0 + 2 * tx
                for i, j, value in ((0, 0, c00), (0, 1, c01), (1, 0, c10), (1, 1, c11)):
                    if r0 + i < m and c0 + j < n:
                        out[r0 + i, c0 + j] = value
            """,
        ),
        right("local_array_accumulators", _register(_REGISTER_LOADS)),
        wrong(
            "one_output_per_thread",
            "index",
            ("top-left 8x8 corner", "2x2 outputs"),
            _tiled(_ZERO_FILLED).replace("def matmul_tiled", "def matmul_register_tiled"),
        ),
        wrong(
            "no_zero_fill",
            "pattern",
            "K = 13 is not a multiple of 8",
            _register(
                """\
            r, c = e // 8, e % 8
            if row0 + r < m and k0 + c < kk:
                a_tile[r, c] = a[row0 + r, k0 + c]
            r, c = e // 16, e % 16
            if k0 + r < kk and col0 + c < n:
                b_tile[r, c] = b[k0 + r, col0 + c]"""
            ),
        ),
        wrong(
            "no_shared_tiles",
            "efficiency",
            ("loaded 32,768 values", "16x8 and 8x16 shared tiles"),
            """
            @cuda.jit
            def matmul_register_tiled(a, b, out):
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                row0, col0 = cuda.blockIdx.y * 16, cuda.blockIdx.x * 16
                for i in range(2):
                    for j in range(2):
                        row, col = row0 + ty + 8 * i, col0 + tx + 8 * j
                        if row < out.shape[0] and col < out.shape[1]:
                            acc = float32(0.0)
                            for k in range(a.shape[1]):
                                acc += a[row, k] * b[k, col]
                            out[row, col] = acc
            """,
        ),
        wrong(
            "no_second_sync",
            "race",
            ("race", "cuda.syncthreads()"),
            _register(_REGISTER_LOADS, second_sync=False),
            absent=("cuda.syncwarp()",),
        ),
        wrong(
            "a_tile_too_small",
            "shared-overrun",
            ("`a_tile` has 8 elements along axis 0", "make it as large as"),
            _register(_REGISTER_LOADS, a_rows=8),
            absent=("guard the loads",),
        ),
        wrong(
            "whole_tiles_only",
            "pattern",
            "only the first 8 of K = 13 terms were summed",
            _register(_REGISTER_LOADS).replace(
                "for k0 in range(0, kk, 8):", "for k0 in range(0, kk - 7, 8):"
            ),
            absent=("load 0.0",),
        ),
        wrong(
            "unguarded_write",
            "guard",
            "Guard the final write",
            _register(_REGISTER_LOADS).replace(
                "            if row < m and col < n:\n                out[row, col] = acc[i, j]",
                "            out[row, col] = acc[i, j]",
            ),
        ),
    ],
    "matvec_warp": [
        right(
            "xor_shuffles_while_loop",
            """
            @cuda.jit
            def matvec_warp(mat, vec, res):
                warp = cuda.grid(1) // 32
                lane = cuda.threadIdx.x % 32
                if warp < mat.shape[0]:
                    partial = float32(0.0)
                    j = lane
                    while j < mat.shape[1]:
                        partial += mat[warp, j] * vec[j]
                        j += 32
                    for mask in (1, 2, 4, 8, 16):
                        partial += cuda.shfl_xor_sync(0xFFFFFFFF, partial, mask)
                    if lane == 0:
                        res[warp] = partial
            """,
        ),
        right(
            "xor_then_last_lane_writes",
            _MATVEC_HEAD
            + """\
    if row < a.shape[0]:
        v = float32(0.0)
        for j in range(lane, a.shape[1], 32):
            v += a[row, j] * x[j]
        offset = 16
        while offset >= 1:
            v += cuda.shfl_xor_sync(0xFFFFFFFF, v, offset)
            offset //= 2
        if lane == 31:  # after xor shuffles every lane holds the sum
            y[row] = v
""",
        ),
        wrong(
            "one_thread_per_row",
            "efficiency",
            ("not coalesced", "32 consecutive elements of ONE row"),
            """
            @cuda.jit
            def matvec_warp(a, x, y):
                row = cuda.grid(1)
                if row < a.shape[0]:
                    acc = float32(0.0)
                    for j in range(a.shape[1]):
                        acc += a[row, j] * x[j]
                    y[row] = acc
            """,
        ),
        wrong(
            "first_32_columns",
            "pattern",
            "only the first 32 columns were summed",
            _MATVEC_HEAD
            + """\
    if row < a.shape[0]:
        v = float32(0.0)
        if lane < a.shape[1]:
            v = a[row, lane] * x[lane]
        for offset in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        if lane == 0:
            y[row] = v
""",
        ),
        wrong(
            "every_lane_writes",
            "race",
            ("write-write race", "exactly one thread"),
            _MATVEC_HEAD
            + """\
    if row < a.shape[0]:
        v = float32(0.0)
        for j in range(lane, a.shape[1], 32):
            v += a[row, j] * x[j]
        for offset in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        y[row] = cuda.shfl_sync(0xFFFFFFFF, v, 0)
""",
        ),
        wrong(
            "lanes_exit_early",
            "partial-mask",
            ("did not take part", "do not return early"),
            _MATVEC_HEAD
            + """\
    if row >= a.shape[0] or lane >= a.shape[1]:
        return
    v = float32(0.0)
    for j in range(lane, a.shape[1], 32):
        v += a[row, j] * x[j]
    for offset in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
    if lane == 0:
        y[row] = v
""",
        ),
        wrong(
            "shuffle_inside_if",
            "partial-mask",
            ("lanes 0-5 at line 9", "a different number of times"),
            _MATVEC_HEAD
            + """\
    if row < a.shape[0]:
        v = float32(0.0)
        for j in range(lane, a.shape[1], 32):
            v += a[row, j] * x[j]
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, 16)
        for offset in (8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        if lane == 0:
            y[row] = v
""",
        ),
        wrong(
            "no_shuffles",
            "pattern",
            "only lane 0's",
            _MATVEC_HEAD
            + """\
    if row < a.shape[0]:
        v = float32(0.0)
        for j in range(lane, a.shape[1], 32):
            v += a[row, j] * x[j]
        if lane == 0:
            y[row] = v
""",
        ),
        wrong(
            "four_shuffle_steps",
            "pattern",
            "only lanes 0 to 15's partial sums reached lane 0",
            _MATVEC_HEAD
            + """\
    if row < a.shape[0]:
        v = float32(0.0)
        for j in range(lane, a.shape[1], 32):
            v += a[row, j] * x[j]
        for offset in (8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        if lane == 0:
            y[row] = v
""",
        ),
        wrong(
            "no_row_guard",
            "guard",
            "a warp whose row is past the end",
            _MATVEC_HEAD
            + """\
    v = float32(0.0)
    for j in range(lane, a.shape[1], 32):
        v += a[row, j] * x[j]
    for offset in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
    if lane == 0:
        y[row] = v
""",
        ),
    ],
}
