"""Lab 05, fused kernels (online softmax, one tile of attention): alternative correct kernels and
known mistakes, as notebook cells."""

from . import right, wrong

CONSTANTS = {"BLOCK_Q": 64, "HEAD_DIM": 8, "TILE": 64}

# online_softmax ---------------------------------------------------------------------------------

_BUTTERFLY = """
    offset = 16
    while offset > 0:
        m_other = cuda.shfl_xor_sync(0xFFFFFFFF, m, offset)
        d_other = cuda.shfl_xor_sync(0xFFFFFFFF, d, offset)
        m_new = max(m, m_other)
        if m_new != -math.inf:
            d = d * math.exp(m - m_new) + d_other * math.exp(m_other - m_new)
        m = m_new
        offset //= 2
"""

_WRITE = """
    for j in range(lane, x.shape[1], 32):
        out[row, j] = math.exp(x[row, j] - m) / d
"""


def _online(update: str, merge: str = _BUTTERFLY, start: str = "-math.inf", write: str = _WRITE):
    """An online_softmax cell: per-lane running (m, d), a merge of the lanes, the output."""
    return f"""
@cuda.jit
def online_softmax(x, out):
    row = cuda.blockIdx.x
    lane = cuda.threadIdx.x
    m = {start}
    d = 0.0
    for j in range(lane, x.shape[1], 32):
{update}
{merge}
{write}
"""


_UPDATE = """
        value = x[row, j]
        m_new = max(m, value)
        d = d * math.exp(m - m_new) + math.exp(value - m_new)
        m = m_new
"""

ONLINE_REFERENCE = _online(_UPDATE)

ONLINE = [
    right("butterfly_merge_of_lane_pairs", ONLINE_REFERENCE),
    right(
        "lane_zero_sequential_loop",
        """
        @cuda.jit
        def online_softmax(x, out):
            row = cuda.blockIdx.x
            lane = cuda.threadIdx.x
            md = cuda.shared.array(2, float32)
            if lane == 0:
                m = -math.inf
                d = 0.0
                for j in range(x.shape[1]):
                    value = x[row, j]
                    if value > m:
                        d = d * math.exp(m - value) + 1.0
                        m = value
                    else:
                        d += math.exp(value - m)
                md[0] = m
                md[1] = d
            cuda.syncthreads()
            for j in range(lane, x.shape[1], cuda.blockDim.x):
                out[row, j] = math.exp(x[row, j] - md[0]) / md[1]
        """,
    ),
    right(
        "shfl_down_tree_then_broadcast",
        """
        @cuda.jit
        def online_softmax(x, out):
            row = cuda.blockIdx.x
            lane = cuda.threadIdx.x
            m = -math.inf
            d = 0.0
            j = lane
            while j < x.shape[1]:
                value = x[row, j]
                bigger = max(m, value)
                d = d * math.exp(m - bigger) + math.exp(value - bigger)
                m = bigger
                j += 32
            for offset in (16, 8, 4, 2, 1):
                m2 = cuda.shfl_down_sync(0xFFFFFFFF, m, offset)
                d2 = cuda.shfl_down_sync(0xFFFFFFFF, d, offset)
                if lane + offset < 32 and m2 != -math.inf:
                    top = max(m, m2)
                    d = d * math.exp(m - top) + d2 * math.exp(m2 - top)
                    m = top
            m = cuda.shfl_sync(0xFFFFFFFF, m, 0)
            d = cuda.shfl_sync(0xFFFFFFFF, d, 0)
            for j in range(lane, x.shape[1], 32):
                out[row, j] = math.exp(x[row, j] - m) / d
        """,
    ),
    wrong(
        "running_max_starts_at_zero",
        "numerics",
        ("all very negative", "-math.inf"),
        _online(_UPDATE, start="0.0"),
        absent=("wrote nothing",),
    ),
    wrong(
        "no_rescale_of_the_sum",
        "pattern",
        ("proportional", "d = d * math.exp(m - m_new)"),
        _online(
            """
        value = x[row, j]
        m_new = max(m, value)
        d = d + math.exp(value - m_new)
        m = m_new
"""
        ),
        absent=("merging two partial pairs",),
    ),
    wrong(
        "merge_adds_sums_without_rescale",
        "pattern",
        ("proportional", "merging two partial pairs"),
        _online(
            _UPDATE,
            merge="""
    for offset in (16, 8, 4, 2, 1):
        m_other = cuda.shfl_xor_sync(0xFFFFFFFF, m, offset)
        d += cuda.shfl_xor_sync(0xFFFFFFFF, d, offset)
        m = max(m, m_other)
""",
        ),
        absent=("with one column per lane, wrong with several",),
    ),
    wrong(
        "empty_lanes_merge_to_nan",
        "numerics",
        ("exp(-inf - (-inf))", "fewer columns than lanes"),
        _online(
            _UPDATE,
            merge="""
    for offset in (16, 8, 4, 2, 1):
        m_other = cuda.shfl_xor_sync(0xFFFFFFFF, m, offset)
        d_other = cuda.shfl_xor_sync(0xFFFFFFFF, d, offset)
        m_new = max(m, m_other)
        d = d * math.exp(m - m_new) + d_other * math.exp(m_other - m_new)
        m = m_new
""",
        ),
    ),
    wrong(
        "two_reductions_three_passes",
        "efficiency",
        ("read from global memory 3.00 times", "two-reduction softmax"),
        """
        @cuda.jit
        def online_softmax(x, out):
            row = cuda.blockIdx.x
            lane = cuda.threadIdx.x
            m = -math.inf
            for j in range(lane, x.shape[1], 32):
                m = max(m, x[row, j])
            for offset in (16, 8, 4, 2, 1):
                m = max(m, cuda.shfl_xor_sync(0xFFFFFFFF, m, offset))
            d = 0.0
            for j in range(lane, x.shape[1], 32):
                d += math.exp(x[row, j] - m)
            for offset in (16, 8, 4, 2, 1):
                d += cuda.shfl_xor_sync(0xFFFFFFFF, d, offset)
            for j in range(lane, x.shape[1], 32):
                out[row, j] = math.exp(x[row, j] - m) / d
        """,
    ),
    wrong(
        "shuffle_only_in_lanes_with_columns",
        "partial-mask",
        ("every lane must take part in each shuffle",),
        _online(
            _UPDATE,
            merge="""
    if lane < x.shape[1]:
        for offset in (16, 8, 4, 2, 1):
            m_other = cuda.shfl_xor_sync(0xFFFFFFFF, m, offset)
            d_other = cuda.shfl_xor_sync(0xFFFFFFFF, d, offset)
            m_new = max(m, m_other)
            if m_new != -math.inf:
                d = d * math.exp(m - m_new) + d_other * math.exp(m_other - m_new)
            m = m_new
""",
        ),
    ),
    wrong(
        "no_maximum_at_all",
        "numerics",
        ("OverflowError",),
        """
        @cuda.jit
        def online_softmax(x, out):
            row = cuda.blockIdx.x
            lane = cuda.threadIdx.x
            d = 0.0
            for j in range(lane, x.shape[1], 32):
                d += math.exp(x[row, j])
            for offset in (16, 8, 4, 2, 1):
                d += cuda.shfl_xor_sync(0xFFFFFFFF, d, offset)
            for j in range(lane, x.shape[1], 32):
                out[row, j] = math.exp(x[row, j]) / d
        """,
    ),
    wrong(
        "lane_zero_keeps_the_result",
        "pattern",
        ("only lane 0's columns", "cuda.shfl_sync(0xFFFFFFFF, m, 0)"),
        _online(
            _UPDATE,
            merge="""
    for offset in (16, 8, 4, 2, 1):
        m_other = cuda.shfl_down_sync(0xFFFFFFFF, m, offset)
        d_other = cuda.shfl_down_sync(0xFFFFFFFF, d, offset)
        if lane + offset < 32 and m_other != -math.inf:
            m_new = max(m, m_other)
            d = d * math.exp(m - m_new) + d_other * math.exp(m_other - m_new)
            m = m_new
""",
        ),
    ),
    wrong(
        "misspelt_shuffle",
        "typo",
        ("cuda.shfl_xor_snyc", "typo"),
        _online(
            _UPDATE,
            merge=_BUTTERFLY.replace("shfl_xor_sync(0xFFFFFFFF, d", "shfl_xor_snyc(0xFFFFFFFF, d"),
        ),
    ),
]

# attention_tile ---------------------------------------------------------------------------------


def _attention(
    update: str,
    tile_guard: str = "j < n",
    key_end: str = "min(TILE, n - start)",
    sync_after_load: str = "cuda.syncthreads()",
    scale: str = "1.0 / math.sqrt(HEAD_DIM)",
    start_m: str = "-math.inf",
):
    """An attention_tile cell: one query per thread, K and V tiles in shared memory, ``update``
    consumes the tile's keys 0 .. kmax - 1 into (m, d, acc)."""
    return f"""
@cuda.jit
def attention_tile(q, k, v, scratch, out):
    k_tile = cuda.shared.array((TILE, HEAD_DIM), float32)
    v_tile = cuda.shared.array((TILE, HEAD_DIM), float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    n = q.shape[0]
    scale = {scale}
    qi = cuda.local.array(HEAD_DIM, float32)
    acc = cuda.local.array(HEAD_DIM, float32)
    for c in range(HEAD_DIM):
        qi[c] = q[i, c] if i < n else 0.0
        acc[c] = 0.0
    m = {start_m}
    d = 0.0
    for start in range(0, n, TILE):
        j = start + t
        if t < TILE and {tile_guard}:
            for c in range(HEAD_DIM):
                k_tile[t, c] = k[j, c]
                v_tile[t, c] = v[j, c]
        {sync_after_load}
        kmax = {key_end}
{update}
        cuda.syncthreads()
    if i < n:
        for c in range(HEAD_DIM):
            out[i, c] = acc[c] / d
"""


# key by key: the online softmax of section 5.1 with a vector accumulator
_PER_KEY = """
        for jj in range(kmax):
            s = 0.0
            for c in range(HEAD_DIM):
                s += qi[c] * k_tile[jj, c]
            s *= scale
            m_new = max(m, s)
            correction = math.exp(m - m_new)
            p = math.exp(s - m_new)
            d = d * correction + p
            for c in range(HEAD_DIM):
                acc[c] = acc[c] * correction + p * v_tile[jj, c]
            m = m_new
"""

ATTENTION_REFERENCE = _attention(_PER_KEY)

# tile by tile, as FlashAttention's Algorithm 1: the tile's maximum first, one rescale per tile
_PER_TILE = """
        tile_max = -math.inf
        for jj in range(kmax):
            s = 0.0
            for c in range(HEAD_DIM):
                s += qi[c] * k_tile[jj, c]
            tile_max = max(tile_max, s * scale)
        m_new = max(m, tile_max)
        correction = math.exp(m - m_new)
        d *= correction
        for c in range(HEAD_DIM):
            acc[c] *= correction
        for jj in range(kmax):
            s = 0.0
            for c in range(HEAD_DIM):
                s += qi[c] * k_tile[jj, c]
            p = math.exp(s * scale - m_new)
            d += p
            for c in range(HEAD_DIM):
                acc[c] += p * v_tile[jj, c]
        m = m_new
"""

ATTENTION = [
    right("key_by_key_running_state", ATTENTION_REFERENCE),
    right("tile_maximum_first_as_algorithm_1", _attention(_PER_TILE)),
    right(
        "tiles_of_16_keys_loaded_by_16_threads",
        _attention(_PER_KEY, tile_guard="j < n", key_end="min(16, n - start)")
        .replace("(TILE, HEAD_DIM)", "(16, HEAD_DIM)")
        .replace("range(0, n, TILE)", "range(0, n, 16)")
        .replace("t < TILE and", "t < 16 and"),
    ),
    wrong(
        "no_rescale_of_the_accumulator",
        "pattern",
        ("the accumulator never being rescaled", "acc[c] * r + p"),
        _attention(_PER_KEY.replace("acc[c] * correction + p", "acc[c] + p")),
        absent=("without the scale", "not a multiple of the key tile"),
    ),
    wrong(
        "tile_by_tile_without_rescale_of_the_accumulator",
        "pattern",
        ("the accumulator never being rescaled",),
        _attention(_PER_TILE.replace("acc[c] *= correction", "acc[c] *= 1.0")),
        absent=("not a multiple of the key tile",),
    ),
    wrong(
        "keys_past_n_in_the_last_tile",
        "guard",
        ("not a multiple of the key tile", "keys j < n"),
        _attention(_PER_KEY, key_end="TILE", tile_guard="j < n").replace(
            "                v_tile[t, c] = v[j, c]",
            "                v_tile[t, c] = v[j, c]\n        else:\n            for c in range(HEAD_DIM):\n                k_tile[t, c] = 0.0\n                v_tile[t, c] = 0.0",
        ),
        absent=("both the sum and the accumulator",),
    ),
    wrong(
        "off_by_one_load_guard",
        "guard",
        ("the last key tile runs past n", "`j < n`"),
        _attention(_PER_KEY, tile_guard="j <= n"),
    ),
    wrong(
        "unfused_scores_in_global_memory",
        "efficiency",
        ("wrote", "`scratch`", "unfused", "registers"),
        _attention(
            """
        if i < n:
            for jj in range(kmax):
                s = 0.0
                for c in range(HEAD_DIM):
                    s += qi[c] * k_tile[jj, c]
                scratch[i, start + jj] = s * scale
            for jj in range(kmax):
                s = scratch[i, start + jj]
                m_new = max(m, s)
                correction = math.exp(m - m_new)
                p = math.exp(s - m_new)
                d = d * correction + p
                for c in range(HEAD_DIM):
                    acc[c] = acc[c] * correction + p * v_tile[jj, c]
                m = m_new
"""
        ),
    ),
    wrong(
        "no_barrier_after_loading_the_tile",
        "race",
        ("race", "cuda.syncthreads()"),
        _attention(_PER_KEY, sync_after_load="pass"),
        absent=("never being rescaled",),
    ),
    wrong(
        "scores_not_scaled",
        "pattern",
        ("without the scale", "sqrt"),
        _attention(_PER_KEY, scale="1.0"),
        absent=("both the sum and the accumulator",),
    ),
    wrong(
        "keys_read_from_global_memory",
        "efficiency",
        ("read from global memory", "shared memory once per block"),
        _attention(
            _PER_KEY.replace("k_tile[jj, c]", "k[start + jj, c]").replace(
                "v_tile[jj, c]", "v[start + jj, c]"
            ),
            tile_guard="False",
        ),
    ),
    wrong(
        "no_running_maximum",
        "numerics",
        ("OverflowError",),
        _attention(_PER_KEY.replace("m_new = max(m, s)", "m_new = 0.0")),
    ),
    wrong(
        "forgot_the_scratch_parameter",
        "signature",
        ("attention_tile(q, k, v, scratch, out)",),
        _attention(_PER_KEY).replace("(q, k, v, scratch, out)", "(q, k, v, out)"),
    ),
]

ANSWERS = {"online_softmax": ONLINE, "attention_tile": ATTENTION}
