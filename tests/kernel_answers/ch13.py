"""Lab 13's decode GEMV (``serving_decode_gemv``, part 2 of solutions/13_serving_lab.ipynb): the
reference, alternative correct kernels, and known mistakes of several kinds, as notebook cells
(the format of ``ch06.py``)."""

from . import right, wrong

REFERENCE = """
@cuda.jit
def decode_gemv(w, x, y):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    acc = float32(0.0)
    for j in range(t, w.shape[1], 64):
        acc += w[row, j] * x[j]
    offset = 16
    while offset > 0:
        acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)
        offset //= 2
    warp_sums = cuda.shared.array(2, float32)
    if t % 32 == 0:
        warp_sums[t // 32] = acc
    cuda.syncthreads()
    if t == 0:
        y[row] = warp_sums[0] + warp_sums[1]
"""


def edit(*replacements: tuple[str, str]) -> str:
    source = REFERENCE
    for old, new in replacements:
        if old not in source:
            raise ValueError(f"{old!r} is not in the reference")
        source = source.replace(old, new)
    return source


ANSWERS = {
    "serving_decode_gemv": [
        right("reference", REFERENCE),
        right(
            "shared_tree",  # no shuffles: a tree over 64 shared slots, a barrier per level
            """
            @cuda.jit
            def decode_gemv(w, x, y):
                sums = cuda.shared.array(64, float32)
                r = cuda.blockIdx.x
                i = cuda.threadIdx.x
                s = 0.0
                j = i
                while j < w.shape[1]:
                    s += w[r, j] * x[j]
                    j += cuda.blockDim.x
                sums[i] = s
                cuda.syncthreads()
                half = 32
                while half > 0:
                    if i < half:
                        sums[i] += sums[i + half]
                    cuda.syncthreads()
                    half //= 2
                if i == 0:
                    y[r] = sums[0]
            """,
        ),
        right(
            "xor_shuffles_one_slot",  # butterfly shuffles; warp 1 hands its sum over one slot
            """
            @cuda.jit
            def decode_gemv(w, x, y):
                other = cuda.shared.array(1, float32)
                lane = cuda.threadIdx.x % 32
                warp = cuda.threadIdx.x // 32
                v = float32(0.0)
                for j in range(cuda.threadIdx.x, w.shape[1], 64):
                    v += w[cuda.blockIdx.x, j] * x[j]
                for k in (16, 8, 4, 2, 1):
                    v += cuda.shfl_xor_sync(0xFFFFFFFF, v, k)
                if warp == 1 and lane == 0:
                    other[0] = v
                cuda.syncthreads()
                if warp == 0 and lane == 0:
                    y[cuda.blockIdx.x] = v + other[0]
            """,
        ),
        wrong(
            "no_loop",
            "index",
            "only the first 64 columns",
            edit(
                (
                    "    for j in range(t, w.shape[1], 64):\n        acc += w[row, j] * x[j]\n",
                    "    if t < w.shape[1]:\n        acc = w[row, t] * x[t]\n",
                )
            ),
        ),
        wrong(
            "loop_steps_by_a_warp",
            "index",
            "columns were counted twice",
            edit(("range(t, w.shape[1], 64)", "range(t, w.shape[1], 32)")),
        ),
        wrong(
            "second_warp_left_out",
            "pattern",
            "the first warp's sum only",
            edit(("y[row] = warp_sums[0] + warp_sums[1]", "y[row] = warp_sums[0]")),
        ),
        wrong(
            "no_shuffles",
            "pattern",
            "the shuffles are missing",
            edit(
                (
                    "        acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)\n",
                    "        pass\n",
                )
            ),
        ),
        wrong(
            "three_shuffle_steps",
            "pattern",
            ("only lanes 0 to 7", "all five steps"),
            edit(("offset = 16\n", "offset = 4\n")),
        ),
        wrong(
            "no_barrier",
            "race",
            ("race", "cuda.syncthreads()"),
            edit(("    cuda.syncthreads()\n", "")),
        ),
        wrong(
            "every_thread_writes",
            "race",
            "exactly one thread per row writes",
            edit(
                (
                    "    if t == 0:\n        y[row] = warp_sums[0] + warp_sums[1]\n",
                    "    y[row] = warp_sums[0] + warp_sums[1]\n",
                )
            ),
        ),
        wrong(
            "transposed_index",
            "index",
            "w[row, j], not w[j, row]",
            edit(("acc += w[row, j] * x[j]", "acc += w[j, row] * x[j]")),
        ),
        wrong(
            "shuffles_only_where_there_is_a_column",
            "partial-mask",
            "all 32 lanes of a warp must reach every shuffle",
            edit(
                (
                    "    offset = 16\n    while offset > 0:\n",
                    "    offset = 16\n    while offset > 0 and t < w.shape[1]:\n",
                )
            ),
        ),
        wrong(
            "thread_per_row",
            "efficiency",
            ("not coalesced", "32 consecutive columns of ONE row"),
            """
            @cuda.jit
            def decode_gemv(w, x, y):
                row = cuda.grid(1)
                if row < w.shape[0]:
                    acc = 0.0
                    for j in range(w.shape[1]):
                        acc += w[row, j] * x[j]
                    y[row] = acc
            """,
        ),
        wrong(
            "chunk_per_thread",
            "efficiency",
            ("not coalesced", "contiguous chunk"),
            edit(
                (
                    "    for j in range(t, w.shape[1], 64):\n",
                    "    chunk = (w.shape[1] + 63) // 64\n"
                    "    for j in range(t * chunk, min(t * chunk + chunk, w.shape[1])):\n",
                )
            ),
        ),
        wrong(
            "returns_the_sum",
            "writes-nothing",
            "a kernel cannot return a value",
            edit(
                (
                    "    if t == 0:\n        y[row] = warp_sums[0] + warp_sums[1]\n",
                    "    return warp_sums[0] + warp_sums[1]\n",
                )
            ),
        ),
    ],
}
