"""Lab 05 (parallel patterns): alternative correct kernels and known mistakes, as notebook
cells. Races rarely change the simulator's results, so most are caught by the trace."""

from . import right, wrong

CONSTANTS = {"BLOCK": 64, "NBINS": 16}

_TREE = """
    stride = BLOCK // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
"""


def _block_sum(load: str, tree: str = _TREE, write: str = "partial[cuda.blockIdx.x] = s[0]"):
    """A reduce_block_sum cell: the shared array, a load, a tree, thread 0's write."""
    return f"""
@cuda.jit
def reduce_block_sum(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
{load}
{tree}
    if t == 0:
        {write}
"""


_LOAD = "    s[t] = x[i] if i < x.size else 0.0\n    cuda.syncthreads()"

ANSWERS = {
    "reduce_block_sum": [
        right(
            "for_loop_over_levels",
            """
            @cuda.jit
            def reduce_block_sum(x, partial):
                s = cuda.shared.array(64, float32)
                t = cuda.threadIdx.x
                i = cuda.blockIdx.x * cuda.blockDim.x + t
                if i < x.shape[0]:
                    s[t] = x[i]
                else:
                    s[t] = 0.0
                cuda.syncthreads()
                for level in range(6):  # strides 32, 16, 8, 4, 2, 1
                    stride = 32 >> level
                    if t < stride:
                        s[t] = s[t] + s[t + stride]
                    cuda.syncthreads()
                if t == 0:
                    partial[cuda.blockIdx.x] = s[0]
            """,
        ),
        right(
            "unrolled_strides_other_names",
            """
            @cuda.jit
            def reduce_block_sum(values, sums):
                cache = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                cache[t] = values[i] if i < values.size else float32(0)
                cuda.syncthreads()
                for stride in (32, 16, 8, 4, 2, 1):
                    if t < stride:
                        cache[t] += cache[t + stride]
                    cuda.syncthreads()
                if t == 0:
                    sums[cuda.blockIdx.x] = cache[0]
            """,
        ),
        wrong(
            "no_sync_in_loop",
            "race",
            ("race", "cuda.syncthreads()"),
            _block_sum(_LOAD, _TREE.replace("        cuda.syncthreads()\n", "")),
        ),
        wrong(
            "no_sync_after_load",
            "race",
            ("race", "cuda.syncthreads()"),
            _block_sum("    s[t] = x[i] if i < x.size else 0.0"),
        ),
        wrong(
            "interleaved",
            "efficiency",
            ("warps diverged", "sequential addressing"),
            _block_sum(
                _LOAD,
                """
    stride = 1
    while stride < BLOCK:
        if t % (2 * stride) == 0:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride *= 2
""",
            ),
        ),
        wrong(
            "strided_index",
            "efficiency",
            ("bank conflicts", "sequential addressing"),
            _block_sum(
                _LOAD,
                """
    stride = 1
    while stride < BLOCK:
        index = 2 * stride * t
        if index < BLOCK:
            s[index] += s[index + stride]
        cuda.syncthreads()
        stride *= 2
""",
            ),
        ),
        wrong(
            "no_write",
            "writes-nothing",
            ("wrote nothing at all", "assign each result to an element of the output"),
            _block_sum(_LOAD, write="total = s[0]"),
        ),
        wrong(
            "sync_inside_if",
            "barrier",
            ("every thread of the block must reach each cuda.syncthreads()", "out of the `if`"),
            _block_sum(
                _LOAD,
                """
    stride = BLOCK // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
            cuda.syncthreads()
        stride //= 2
""",
            ),
        ),
        wrong(
            "float_stride",
            "exception",
            ("float", "`//`"),
            _block_sum(
                _LOAD,
                """
    stride = cuda.blockDim.x / 2
    while stride >= 1:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride /= 2
""",
            ),
            absent=("guard the load",),
        ),
        wrong(
            "first_stride_whole_block",
            "shared-overrun",
            ("ran past its end", "cuda.blockDim.x // 2"),
            _block_sum(_LOAD, _TREE.replace("stride = BLOCK // 2", "stride = BLOCK")),
        ),
        wrong(
            "global_index_into_shared",
            "shared-overrun",
            ("ran past its end", "`t = cuda.threadIdx.x`"),
            _block_sum("    s[i] = x[i] if i < x.size else 0.0\n    cuda.syncthreads()"),
        ),
    ],
    "reduce_first_add": [
        right(
            "two_guarded_loads_other_names",
            """
            @cuda.jit
            def reduce_first_add(values, sums):
                s = cuda.shared.array(64, float32)
                t = cuda.threadIdx.x
                base = cuda.blockIdx.x * 128 + t
                low = values[base] if base < values.size else 0.0
                high = values[base + 64] if base + 64 < values.size else 0.0
                s[t] = low + high
                cuda.syncthreads()
                stride = 32
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                if t == 0:
                    sums[cuda.blockIdx.x] = s[0]
            """,
        ),
        right(
            "loop_over_the_two_halves",
            """
            @cuda.jit
            def reduce_first_add(x, partial):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                v = float32(0.0)
                for half in range(2):
                    k = cuda.blockIdx.x * 2 * BLOCK + half * BLOCK + t
                    if k < x.size:
                        v += x[k]
                s[t] = v
                cuda.syncthreads()
                for stride in (32, 16, 8, 4, 2, 1):
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                if t == 0:
                    partial[cuda.blockIdx.x] = s[0]
            """,
        ),
        wrong(
            "adjacent_pairs",
            "efficiency",
            ("not coalesced", "x[i + 64]"),
            """
            @cuda.jit
            def reduce_first_add(x, partial):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = 2 * (cuda.blockIdx.x * BLOCK + t)
                v = x[i] if i < x.size else 0.0
                if i + 1 < x.size:
                    v += x[i + 1]
                s[t] = v
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                if t == 0:
                    partial[cuda.blockIdx.x] = s[0]
            """,
        ),
        wrong(
            "no_first_add",
            "pattern",
            "each block covers 128 elements",
            """
            @cuda.jit
            def reduce_first_add(x, partial):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.blockIdx.x * 2 * BLOCK + t
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                if t == 0:
                    partial[cuda.blockIdx.x] = s[0]
            """,
        ),
        wrong(
            "unguarded_second_load",
            "guard",
            ("valid indices are", "guard the load"),
            """
            @cuda.jit
            def reduce_first_add(x, partial):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.blockIdx.x * 2 * BLOCK + t
                v = x[i] if i < x.size else 0.0
                v += x[i + BLOCK]
                s[t] = v
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                if t == 0:
                    partial[cuda.blockIdx.x] = s[0]
            """,
        ),
        wrong(
            "global_index_into_shared",
            "shared-overrun",
            ("shared array ran past its end", "threadIdx.x"),
            """
            @cuda.jit
            def reduce_first_add(x, partial):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.blockIdx.x * 2 * BLOCK + t
                v = x[i] if i < x.size else 0.0
                if i + BLOCK < x.size:
                    v += x[i + BLOCK]
                s[i] = v
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                if t == 0:
                    partial[cuda.blockIdx.x] = s[0]
            """,
        ),
        wrong(
            "no_sync_after_load",
            "race",
            ("race", "cuda.syncthreads()"),
            """
            @cuda.jit
            def reduce_first_add(x, partial):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.blockIdx.x * 2 * BLOCK + t
                v = x[i] if i < x.size else 0.0
                if i + BLOCK < x.size:
                    v += x[i + BLOCK]
                s[t] = v
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                if t == 0:
                    partial[cuda.blockIdx.x] = s[0]
            """,
        ),
        wrong(
            "adds_into_x",
            "writes-input",
            "`x`",
            """
            @cuda.jit
            def reduce_first_add(x, partial):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.blockIdx.x * 2 * BLOCK + t
                if i + BLOCK < x.size:
                    x[i] += x[i + BLOCK]
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                if t == 0:
                    partial[cuda.blockIdx.x] = s[0]
            """,
        ),
    ],
    "reduce_warp_shuffle": [
        right(
            "xor_in_each_warp",
            """
            @cuda.jit
            def reduce_warp_shuffle(x, total):
                warp_sums = cuda.shared.array(2, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                v = x[i] if i < x.size else float32(0.0)
                for mask in (16, 8, 4, 2, 1):
                    v += cuda.shfl_xor_sync(0xFFFFFFFF, v, mask)
                if t % 32 == 0:
                    warp_sums[t // 32] = v
                cuda.syncthreads()
                if t == 0:
                    cuda.atomic.add(total, 0, warp_sums[0] + warp_sums[1])
            """,
        ),
        right(
            "shuffle_then_warp_partials",
            """
            @cuda.jit
            def reduce_warp_shuffle(x, total):
                s = cuda.shared.array(2, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                v = x[i] if i < x.size else float32(0.0)
                for offset in (16, 8, 4, 2, 1):
                    v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
                if t % 32 == 0:
                    s[t // 32] = v
                cuda.syncthreads()
                if t < 32:
                    w = s[t] if t < 2 else float32(0.0)
                    for offset in (16, 8, 4, 2, 1):
                        w += cuda.shfl_down_sync(0xFFFFFFFF, w, offset)
                    if t == 0:
                        cuda.atomic.add(total, 0, w)
            """,
        ),
        wrong(
            "shared_final_stage",
            "efficiency",
            ("partly idle warps", "shfl_down_sync"),
            """
            @cuda.jit
            def reduce_warp_shuffle(x, total):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                if t == 0:
                    cuda.atomic.add(total, 0, s[0])
            """,
        ),
        wrong(
            "no_atomic",
            "race",
            ("overwrites the other blocks", "cuda.atomic.add"),
            """
            @cuda.jit
            def reduce_warp_shuffle(x, total):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                if t < 32:
                    v = s[t] + s[t + 32]
                    for offset in (16, 8, 4, 2, 1):
                        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
                    if t == 0:
                        total[0] = v
            """,
        ),
        wrong(
            "four_steps",
            "pattern",
            "all five steps",
            """
            @cuda.jit
            def reduce_warp_shuffle(x, total):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                if t < 32:
                    v = s[t] + s[t + 32]
                    for offset in (16, 8, 4, 2):
                        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
                    if t == 0:
                        cuda.atomic.add(total, 0, v)
            """,
        ),
        wrong(
            "every_lane_adds",
            "pattern",
            "every lane added the block's sum",
            """
            @cuda.jit
            def reduce_warp_shuffle(x, total):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                if t < 32:
                    v = s[t] + s[t + 32]
                    for offset in (16, 8, 4, 2, 1):
                        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, offset)
                    cuda.atomic.add(total, 0, v)
            """,
        ),
        wrong(
            "lanes_exit_early",
            "partial-mask",
            ("did not take part", "undefined on a GPU", "all 32 lanes of warp 0"),
            """
            @cuda.jit
            def reduce_warp_shuffle(x, total):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                if t < 32:
                    if i >= x.size:
                        return
                    v = s[t] + s[t + 32]
                    for offset in (16, 8, 4, 2, 1):
                        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
                    if t == 0:
                        cuda.atomic.add(total, 0, v)
            """,
            absent=("guard the load",),
        ),
        wrong(
            "shuffle_inside_an_if",
            "partial-mask",
            ("line 11", "inside an `if`", "undefined on a GPU"),
            """
            @cuda.jit
            def reduce_warp_shuffle(x, total):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                v = s[t] + s[t + 32] if t < 32 else 0.0
                for offset in (16, 8, 4, 2, 1):
                    if t < offset:
                        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
                if t == 0:
                    cuda.atomic.add(total, 0, v)
            """,
            absent=("has exited the kernel", "guard the load"),
        ),
        wrong(
            "typo_shfl_down",
            "typo",
            ("`cuda.shfl_down` does not exist", "line 11", "`cuda.shfl_down_sync`"),
            """
            @cuda.jit
            def reduce_warp_shuffle(x, total):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                if t < 32:
                    v = s[t] + s[t + 32]
                    for offset in (16, 8, 4, 2, 1):
                        v += cuda.shfl_down(0xFFFFFFFF, v, offset)
                    if t == 0:
                        cuda.atomic.add(total, 0, v)
            """,
            absent=("guard the load",),
        ),
        wrong(
            "reduce_block_sum_instead",
            "signature",
            ("`total` has a single element", "cuda.atomic.add(total, 0, v)"),
            """
            @cuda.jit
            def reduce_block_sum(x, partial):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                if t == 0:
                    partial[cuda.blockIdx.x] = s[0]
            """,
            absent=("guard the",),
        ),
    ],
    "block_scan": [
        right(
            "double_buffer",
            """
            @cuda.jit
            def block_scan(x, out):
                buffers = cuda.shared.array((2, 64), float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                buffers[0, t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                src = 0
                offset = 1
                while offset < 64:
                    value = buffers[src, t]
                    if t >= offset:
                        value += buffers[src, t - offset]
                    buffers[1 - src, t] = value
                    cuda.syncthreads()
                    src = 1 - src
                    offset *= 2
                if i < x.size:
                    out[i] = buffers[src, t]
            """,
        ),
        right(
            "warp_shuffle_scan",
            """
            @cuda.jit
            def block_scan(x, out):
                warp_totals = cuda.shared.array(2, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                lane, warp = t % 32, t // 32
                v = x[i] if i < x.size else float32(0.0)
                for offset in (1, 2, 4, 8, 16):
                    below = cuda.shfl_up_sync(0xFFFFFFFF, v, offset)
                    if lane >= offset:
                        v += below
                if lane == 31:
                    warp_totals[warp] = v
                cuda.syncthreads()
                if warp == 1:
                    v += warp_totals[0]
                if i < x.size:
                    out[i] = v
            """,
        ),
        wrong(
            "read_write_same_step",
            "race",
            ("race", "cuda.syncthreads()"),
            """
            @cuda.jit
            def block_scan(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                offset = 1
                while offset < BLOCK:
                    if t >= offset:
                        s[t] += s[t - offset]
                    cuda.syncthreads()
                    offset *= 2
                if i < x.size:
                    out[i] = s[t]
            """,
        ),
        wrong(
            "exclusive",
            "pattern",
            "exclusive scan",
            """
            @cuda.jit
            def block_scan(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                offset = 1
                while offset < BLOCK:
                    add = s[t - offset] if t >= offset else 0.0
                    cuda.syncthreads()
                    s[t] += add
                    cuda.syncthreads()
                    offset *= 2
                if i < x.size:
                    out[i] = s[t] - x[i]
            """,
        ),
        wrong(
            "stops_at_16",
            "pattern",
            "only the last 32 values",
            """
            @cuda.jit
            def block_scan(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                offset = 1
                while offset <= 16:
                    add = s[t - offset] if t >= offset else 0.0
                    cuda.syncthreads()
                    s[t] += add
                    cuda.syncthreads()
                    offset *= 2
                if i < x.size:
                    out[i] = s[t]
            """,
        ),
        wrong(
            "suffix_sums",
            "pattern",
            "s[t - offset]",
            """
            @cuda.jit
            def block_scan(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                offset = 1
                while offset < BLOCK:
                    add = s[t + offset] if t + offset < BLOCK else 0.0
                    cuda.syncthreads()
                    s[t] += add
                    cuda.syncthreads()
                    offset *= 2
                if i < x.size:
                    out[i] = s[t]
            """,
            absent=("race", "syncthreads"),
        ),
        wrong(
            "unguarded_write",
            "guard",
            ("if i < x.size:", "out[i]"),
            """
            @cuda.jit
            def block_scan(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                offset = 1
                while offset < BLOCK:
                    add = s[t - offset] if t >= offset else 0.0
                    cuda.syncthreads()
                    s[t] += add
                    cuda.syncthreads()
                    offset *= 2
                out[i] = s[t]
            """,
            absent=("guard the load",),
        ),
        wrong(
            "scans_in_place",
            "writes-input",
            "`x`",
            """
            @cuda.jit
            def block_scan(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                offset = 1
                while offset < BLOCK:
                    add = s[t - offset] if t >= offset else 0.0
                    cuda.syncthreads()
                    s[t] += add
                    cuda.syncthreads()
                    offset *= 2
                if i < x.size:
                    x[i] = s[t]
                    out[i] = x[i]
            """,
        ),
        wrong(
            "undefined_offset",
            "typo",
            ("NameError", "ofset"),
            """
            @cuda.jit
            def block_scan(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                s[t] = x[i] if i < x.size else 0.0
                cuda.syncthreads()
                offset = 1
                while offset < BLOCK:
                    add = s[t - offset] if t >= ofset else 0.0
                    cuda.syncthreads()
                    s[t] += add
                    cuda.syncthreads()
                    offset *= 2
                if i < x.size:
                    out[i] = s[t]
            """,
            absent=("guard the load",),
        ),
    ],
    "histogram_shared": [
        right(
            "strided_zeroing_and_flush",
            """
            @cuda.jit
            def histogram_shared(data, counts):
                local = cuda.shared.array(16, int32)
                t = cuda.threadIdx.x
                for b in range(t, 16, cuda.blockDim.x):
                    local[b] = 0
                cuda.syncthreads()
                i = cuda.grid(1)
                if i < data.shape[0]:
                    cuda.atomic.add(local, data[i], 1)
                cuda.syncthreads()
                for b in range(t, 16, cuda.blockDim.x):
                    if local[b] != 0:
                        cuda.atomic.add(counts, b, local[b])
            """,
        ),
        right(
            "grid_stride_counting",
            """
            @cuda.jit
            def histogram_shared(values, bins):
                local = cuda.shared.array(NBINS, int32)
                t = cuda.threadIdx.x
                if t < NBINS:
                    local[t] = 0
                cuda.syncthreads()
                for k in range(cuda.grid(1), values.size, cuda.gridsize(1)):
                    cuda.atomic.add(local, values[k], 1)
                cuda.syncthreads()
                if t < NBINS:
                    cuda.atomic.add(bins, t, local[t])
            """,
        ),
        wrong(
            "global_atomics",
            "efficiency",
            ("warp-wide atomic requests", "privatise"),
            """
            @cuda.jit
            def histogram_shared(values, bins):
                i = cuda.grid(1)
                if i < values.size:
                    cuda.atomic.add(bins, values[i], 1)
            """,
        ),
        wrong(
            "plain_increment",
            "race",
            ("race", "atomic"),
            """
            @cuda.jit
            def histogram_shared(values, bins):
                local = cuda.shared.array(NBINS, int32)
                t = cuda.threadIdx.x
                if t < NBINS:
                    local[t] = 0
                cuda.syncthreads()
                i = cuda.grid(1)
                if i < values.size:
                    local[values[i]] += 1
                cuda.syncthreads()
                if t < NBINS:
                    cuda.atomic.add(bins, t, local[t])
            """,
        ),
        wrong(
            "no_sync_before_flush",
            "race",
            ("race", "cuda.syncthreads()"),
            """
            @cuda.jit
            def histogram_shared(values, bins):
                local = cuda.shared.array(NBINS, int32)
                t = cuda.threadIdx.x
                if t < NBINS:
                    local[t] = 0
                cuda.syncthreads()
                i = cuda.grid(1)
                if i < values.size:
                    cuda.atomic.add(local, values[i], 1)
                if t < NBINS:
                    cuda.atomic.add(bins, t, local[t])
            """,
        ),
        wrong(
            "plain_flush",
            "race",
            ("race", "atomic"),
            """
            @cuda.jit
            def histogram_shared(values, bins):
                local = cuda.shared.array(NBINS, int32)
                t = cuda.threadIdx.x
                if t < NBINS:
                    local[t] = 0
                cuda.syncthreads()
                i = cuda.grid(1)
                if i < values.size:
                    cuda.atomic.add(local, values[i], 1)
                cuda.syncthreads()
                if t < NBINS:
                    bins[t] += local[t]
            """,
        ),
        wrong(
            "serial_flush",
            "efficiency",
            ("atomic requests reached `bins`", "not a loop in one"),
            """
            @cuda.jit
            def histogram_shared(values, bins):
                local = cuda.shared.array(NBINS, int32)
                t = cuda.threadIdx.x
                if t < NBINS:
                    local[t] = 0
                cuda.syncthreads()
                i = cuda.grid(1)
                if i < values.size:
                    cuda.atomic.add(local, values[i], 1)
                cuda.syncthreads()
                if t == 0:
                    for b in range(NBINS):
                        cuda.atomic.add(bins, b, local[b])
            """,
        ),
        wrong(
            "bin_off_by_one",
            "shared-overrun",
            ("index 16", "a bin index is the value itself"),
            """
            @cuda.jit
            def histogram_shared(values, bins):
                local = cuda.shared.array(NBINS, int32)
                t = cuda.threadIdx.x
                if t < NBINS:
                    local[t] = 0
                cuda.syncthreads()
                i = cuda.grid(1)
                if i < values.size:
                    cuda.atomic.add(local, values[i] + 1, 1)
                cuda.syncthreads()
                if t < NBINS:
                    cuda.atomic.add(bins, t, local[t])
            """,
            absent=("guard the count",),
        ),
        wrong(
            "no_guard",
            "guard",
            "guard the count with `if i < values.size:`",
            """
            @cuda.jit
            def histogram_shared(values, bins):
                local = cuda.shared.array(NBINS, int32)
                t = cuda.threadIdx.x
                if t < NBINS:
                    local[t] = 0
                cuda.syncthreads()
                cuda.atomic.add(local, values[cuda.grid(1)], 1)
                cuda.syncthreads()
                if t < NBINS:
                    cuda.atomic.add(bins, t, local[t])
            """,
        ),
    ],
    "softmax_rows": [
        right(
            "shuffles_for_both_reductions",
            """
            @cuda.jit
            def softmax_rows(x, out):
                partials = cuda.shared.array(2, float32)
                t = cuda.threadIdx.x
                row = cuda.blockIdx.x
                m = float32(-3.0e38)
                for j in range(t, x.shape[1], 64):
                    m = max(m, x[row, j])
                for offset in (16, 8, 4, 2, 1):
                    m = max(m, cuda.shfl_xor_sync(0xFFFFFFFF, m, offset))
                if t % 32 == 0:
                    partials[t // 32] = m
                cuda.syncthreads()
                m = max(partials[0], partials[1])
                cuda.syncthreads()  # both warps have read the maxima before the array is reused
                total = float32(0.0)
                for j in range(t, x.shape[1], 64):
                    total += math.exp(x[row, j] - m)
                for offset in (16, 8, 4, 2, 1):
                    total += cuda.shfl_xor_sync(0xFFFFFFFF, total, offset)
                if t % 32 == 0:
                    partials[t // 32] = total
                cuda.syncthreads()
                total = partials[0] + partials[1]
                for j in range(t, x.shape[1], 64):
                    out[row, j] = math.exp(x[row, j] - m) / total
            """,
        ),
        right(
            "online_max_and_sum",
            """
            @cuda.jit
            def softmax_rows(x, out):
                sm = cuda.shared.array(BLOCK, float32)
                ss = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                row = cuda.blockIdx.x
                m = -math.inf
                total = 0.0
                for j in range(t, x.shape[1], cuda.blockDim.x):  # one pass: rescale as m grows
                    v = x[row, j]
                    if v > m:
                        total = total * math.exp(m - v) + 1.0
                        m = v
                    else:
                        total += math.exp(v - m)
                sm[t] = m
                ss[t] = total
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        m1, m2 = sm[t], sm[t + stride]
                        mm = max(m1, m2)
                        s1 = ss[t] * math.exp(m1 - mm) if m1 > -math.inf else 0.0
                        s2 = ss[t + stride] * math.exp(m2 - mm) if m2 > -math.inf else 0.0
                        sm[t] = mm
                        ss[t] = s1 + s2
                    cuda.syncthreads()
                    stride //= 2
                m, total = sm[0], ss[0]
                for j in range(t, x.shape[1], cuda.blockDim.x):
                    out[row, j] = math.exp(x[row, j] - m) / total
            """,
        ),
        wrong(
            "no_max",
            "numerics",
            ("exp overflows float32", "subtract the row's maximum"),
            """
            @cuda.jit
            def softmax_rows(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                row = cuda.blockIdx.x
                total = 0.0
                for j in range(t, x.shape[1], BLOCK):
                    total += math.exp(x[row, j])
                s[t] = total
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                for j in range(t, x.shape[1], BLOCK):
                    out[row, j] = math.exp(x[row, j]) / s[0]
            """,
        ),
        wrong(
            "max_starts_at_zero",
            "numerics",
            ("all very negative", "-math.inf"),
            """
            @cuda.jit
            def softmax_rows(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                row = cuda.blockIdx.x
                m = 0.0
                for j in range(t, x.shape[1], BLOCK):
                    m = max(m, x[row, j])
                s[t] = m
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] = max(s[t], s[t + stride])
                    cuda.syncthreads()
                    stride //= 2
                m = s[0]
                cuda.syncthreads()
                total = 0.0
                for j in range(t, x.shape[1], BLOCK):
                    total += math.exp(x[row, j] - m)
                s[t] = total
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                for j in range(t, x.shape[1], BLOCK):
                    out[row, j] = math.exp(x[row, j] - m) / s[0]
            """,
            absent=("wrote nothing",),
        ),
        wrong(
            "no_sync_after_max",
            "race",
            ("race", "cuda.syncthreads()"),
            """
            @cuda.jit
            def softmax_rows(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                row = cuda.blockIdx.x
                m = -math.inf
                for j in range(t, x.shape[1], BLOCK):
                    m = max(m, x[row, j])
                s[t] = m
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] = max(s[t], s[t + stride])
                    cuda.syncthreads()
                    stride //= 2
                m = s[0]
                total = 0.0
                for j in range(t, x.shape[1], BLOCK):
                    total += math.exp(x[row, j] - m)
                s[t] = total
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                for j in range(t, x.shape[1], BLOCK):
                    out[row, j] = math.exp(x[row, j] - m) / s[0]
            """,
        ),
        wrong(
            "max_overwritten",
            "pattern",
            "the maximum was overwritten by the sum",
            """
            @cuda.jit
            def softmax_rows(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                row = cuda.blockIdx.x
                m = -math.inf
                for j in range(t, x.shape[1], BLOCK):
                    m = max(m, x[row, j])
                s[t] = m
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] = max(s[t], s[t + stride])
                    cuda.syncthreads()
                    stride //= 2
                m = s[0]
                cuda.syncthreads()
                total = 0.0
                for j in range(t, x.shape[1], BLOCK):
                    total += math.exp(x[row, j] - m)
                s[t] = total
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                m = s[0]  # the shared array now holds the sum, not the max
                for j in range(t, x.shape[1], BLOCK):
                    out[row, j] = math.exp(x[row, j] - m) / s[0]
            """,
        ),
        wrong(
            "no_column_loop",
            "index",
            "only the first 64 columns were written",
            """
            @cuda.jit
            def softmax_rows(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                row = cuda.blockIdx.x
                inside = t < x.shape[1]
                s[t] = x[row, t] if inside else -math.inf
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] = max(s[t], s[t + stride])
                    cuda.syncthreads()
                    stride //= 2
                m = s[0]
                cuda.syncthreads()
                s[t] = math.exp(x[row, t] - m) if inside else 0.0
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                if inside:
                    out[row, t] = math.exp(x[row, t] - m) / s[0]
            """,
        ),
        wrong(
            "sum_of_64_columns",
            "pattern",
            "the sum covers only the first 64 columns",
            """
            @cuda.jit
            def softmax_rows(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                row = cuda.blockIdx.x
                m = -math.inf
                for j in range(t, x.shape[1], BLOCK):
                    m = max(m, x[row, j])
                s[t] = m
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] = max(s[t], s[t + stride])
                    cuda.syncthreads()
                    stride //= 2
                m = s[0]
                cuda.syncthreads()
                s[t] = math.exp(x[row, t] - m) if t < x.shape[1] else 0.0
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                for j in range(t, x.shape[1], BLOCK):
                    out[row, j] = math.exp(x[row, j] - m) / s[0]
            """,
        ),
        wrong(
            "typo_cuda_exp",
            "typo",
            ("`cuda.exp` does not exist", "line 21"),
            """
            @cuda.jit
            def softmax_rows(x, out):
                s = cuda.shared.array(BLOCK, float32)
                t = cuda.threadIdx.x
                row = cuda.blockIdx.x
                m = -math.inf
                for j in range(t, x.shape[1], BLOCK):
                    m = max(m, x[row, j])
                s[t] = m
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] = max(s[t], s[t + stride])
                    cuda.syncthreads()
                    stride //= 2
                m = s[0]
                cuda.syncthreads()
                total = 0.0
                for j in range(t, x.shape[1], BLOCK):
                    total += cuda.exp(x[row, j] - m)
                s[t] = total
                cuda.syncthreads()
                stride = BLOCK // 2
                while stride > 0:
                    if t < stride:
                        s[t] += s[t + stride]
                    cuda.syncthreads()
                    stride //= 2
                for j in range(t, x.shape[1], BLOCK):
                    out[row, j] = math.exp(x[row, j] - m) / s[0]
            """,
            absent=("loop over the row's columns",),
        ),
    ],
}
