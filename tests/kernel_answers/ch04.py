"""Lab 04 (memory): alternative correct kernels and known mistakes, as notebook cells."""

from . import right, wrong

CONSTANTS = {"TILE": 32, "ROWS": 8, "STENCIL_THREADS": 128}

_TRANSPOSE_GUARD = "check every element against the matrix edges"
_STENCIL_GUARD = "every load and store needs its guard"

ANSWERS = {
    "copy_grid_stride": [
        right(
            "while_loop",
            """
            @cuda.jit
            def copy_grid_stride(src, dst):
                k = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
                step = cuda.blockDim.x * cuda.gridDim.x
                while k < dst.shape[0]:
                    dst[k] = src[k]
                    k += step
            """,
        ),
        right(
            "other_names_passes",
            """
            @cuda.jit
            def copy_grid_stride(source, target):
                threads = cuda.gridsize(1)
                for base in range(0, source.size, threads):
                    k = base + cuda.grid(1)
                    if k < source.size:
                        target[k] = source[k]
            """,
        ),
        wrong(
            "chunk_per_thread",
            "efficiency",
            (
                "traced with n = 4096",
                "32.0 sectors of 32 bytes",
                "each thread seems to copy its own contiguous chunk",
            ),
            """
            @cuda.jit
            def copy_grid_stride(src, dst):
                threads = cuda.gridsize(1)
                chunk = (src.size + threads - 1) // threads
                start = cuda.grid(1) * chunk
                for k in range(start, min(start + chunk, src.size)):
                    dst[k] = src[k]
            """,
        ),
        wrong(
            "block_stride",
            "race",
            "two threads copied the same element",
            """
            @cuda.jit
            def copy_grid_stride(src, dst):
                for k in range(cuda.grid(1), src.size, cuda.blockDim.x):
                    dst[k] = src[k]
            """,
        ),
        wrong(
            "one_each",
            "index",
            "only the first 128 elements were copied",
            """
            @cuda.jit
            def copy_grid_stride(src, dst):
                k = cuda.grid(1)
                if k < src.size:
                    dst[k] = src[k]
            """,
        ),
        wrong(
            "from_thread_index",
            "index",
            "start at the global index `cuda.grid(1)`",
            """
            @cuda.jit
            def copy_grid_stride(src, dst):
                for k in range(cuda.threadIdx.x, src.size, cuda.gridsize(1)):
                    dst[k] = src[k]
            """,
        ),
        wrong(
            "stops_short",
            "guard",
            "only the last element is missing",
            """
            @cuda.jit
            def copy_grid_stride(src, dst):
                for k in range(cuda.grid(1), src.size - 1, cuda.gridsize(1)):
                    dst[k] = src[k]
            """,
        ),
        wrong(
            "no_bound",
            "guard",
            ("valid indices are", "keep every index below src.size"),
            """
            @cuda.jit
            def copy_grid_stride(src, dst):
                k = cuda.grid(1)
                while k < 4096:
                    dst[k] = src[k]
                    k += cuda.gridsize(1)
            """,
        ),
        wrong(
            "typo_grid_size",
            "typo",
            ("AttributeError", "grid_size", "line 3"),
            """
            @cuda.jit
            def copy_grid_stride(src, dst):
                for k in range(cuda.grid(1), src.size, cuda.grid_size(1)):
                    dst[k] = src[k]
            """,
            absent=("keep every index below src.size",),
        ),
        wrong(
            "moves_instead_of_copying",
            "writes-input",
            "`src`",
            """
            @cuda.jit
            def copy_grid_stride(src, dst):
                for k in range(cuda.grid(1), src.size, cuda.gridsize(1)):
                    dst[k] = src[k]
                    src[k] = 0.0
            """,
        ),
    ],
    "transpose_tiled": [
        right(
            "swizzled",
            """
            @cuda.jit
            def transpose_tiled(a, out):  # XOR-swizzled columns instead of padding
                tile = cuda.shared.array((32, 32), float32)
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                row0, col0 = cuda.blockIdx.y * 32, cuda.blockIdx.x * 32
                for j in range(ty, 32, cuda.blockDim.y):
                    if row0 + j < a.shape[0] and col0 + tx < a.shape[1]:
                        tile[j, tx ^ j] = a[row0 + j, col0 + tx]
                cuda.syncthreads()
                for j in range(ty, 32, cuda.blockDim.y):
                    if col0 + j < out.shape[0] and row0 + tx < out.shape[1]:
                        out[col0 + j, row0 + tx] = tile[tx, j ^ tx]
            """,
        ),
        right(
            "padded_while_loops",
            """
            @cuda.jit
            def transpose_tiled(matrix, result):
                tile = cuda.shared.array((32, 33), float32)
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                bx, by = cuda.blockIdx.x, cuda.blockIdx.y
                j = ty
                while j < TILE:
                    r, c = by * TILE + j, bx * TILE + tx
                    tile[j, tx] = matrix[r, c] if r < matrix.shape[0] and c < matrix.shape[1] else 0
                    j += ROWS
                cuda.syncthreads()
                j = ty
                while j < TILE:
                    r, c = bx * TILE + j, by * TILE + tx
                    if r < result.shape[0] and c < result.shape[1]:
                        result[r, c] = tile[tx, j]
                    j += ROWS
            """,
        ),
        wrong(
            "naive",
            "efficiency",
            "consecutive threads write down a column of `out`",
            """
            @cuda.jit
            def transpose_tiled(a, out):
                x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
                y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
                for j in range(0, TILE, 8):
                    if y + j < a.shape[0] and x < a.shape[1]:
                        out[x, y + j] = a[y + j, x]
            """,
        ),
        wrong(
            "unpadded",
            "efficiency",
            ("3,968 extra wavefronts", "pad each row by one element"),
            """
            @cuda.jit
            def transpose_tiled(a, out):
                tile = cuda.shared.array((TILE, TILE), float32)
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                x = cuda.blockIdx.x * TILE + tx
                y = cuda.blockIdx.y * TILE + ty
                for j in range(0, TILE, 8):
                    if y + j < a.shape[0] and x < a.shape[1]:
                        tile[ty + j, tx] = a[y + j, x]
                cuda.syncthreads()
                x = cuda.blockIdx.y * TILE + tx
                y = cuda.blockIdx.x * TILE + ty
                for j in range(0, TILE, 8):
                    if y + j < out.shape[0] and x < out.shape[1]:
                        out[y + j, x] = tile[tx, ty + j]
            """,
        ),
        wrong(
            "no_syncthreads",
            "race",
            ("race on tile[", "in shared memory", "put cuda.syncthreads() between the writes"),
            """
            @cuda.jit
            def transpose_tiled(a, out):
                tile = cuda.shared.array((TILE, TILE + 1), float32)
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                x = cuda.blockIdx.x * TILE + tx
                y = cuda.blockIdx.y * TILE + ty
                for j in range(0, TILE, 8):
                    if y + j < a.shape[0] and x < a.shape[1]:
                        tile[ty + j, tx] = a[y + j, x]
                x = cuda.blockIdx.y * TILE + tx
                y = cuda.blockIdx.x * TILE + ty
                for j in range(0, TILE, 8):
                    if y + j < out.shape[0] and x < out.shape[1]:
                        out[y + j, x] = tile[tx, ty + j]
            """,
            absent=("cuda.syncwarp()",),
        ),
        wrong(
            "tile_not_transposed",
            "pattern",
            "was not transposed inside",
            """
            @cuda.jit
            def transpose_tiled(a, out):
                tile = cuda.shared.array((TILE, TILE + 1), float32)
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                x = cuda.blockIdx.x * TILE + tx
                y = cuda.blockIdx.y * TILE + ty
                for j in range(0, TILE, 8):
                    if y + j < a.shape[0] and x < a.shape[1]:
                        tile[ty + j, tx] = a[y + j, x]
                cuda.syncthreads()
                x = cuda.blockIdx.y * TILE + tx
                y = cuda.blockIdx.x * TILE + ty
                for j in range(0, TILE, 8):
                    if y + j < out.shape[0] and x < out.shape[1]:
                        out[y + j, x] = tile[ty + j, tx]
            """,
        ),
        wrong(
            "no_guard",
            "guard",
            _TRANSPOSE_GUARD,
            """
            @cuda.jit
            def transpose_tiled(a, out):
                tile = cuda.shared.array((TILE, TILE + 1), float32)
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                x = cuda.blockIdx.x * TILE + tx
                y = cuda.blockIdx.y * TILE + ty
                for j in range(0, TILE, 8):
                    tile[ty + j, tx] = a[y + j, x]
                cuda.syncthreads()
                x = cuda.blockIdx.y * TILE + tx
                y = cuda.blockIdx.x * TILE + ty
                for j in range(0, TILE, 8):
                    out[y + j, x] = tile[tx, ty + j]
            """,
        ),
        wrong(
            "tile_too_small",
            "shared-overrun",
            ("the shared tile must hold the block's whole 32x32 tile", "(32, 33)"),
            """
            @cuda.jit
            def transpose_tiled(a, out):
                tile = cuda.shared.array((TILE, ROWS), float32)  # one row of threads' worth
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                x = cuda.blockIdx.x * TILE + tx
                y = cuda.blockIdx.y * TILE + ty
                for j in range(0, TILE, ROWS):
                    if y + j < a.shape[0] and x < a.shape[1]:
                        tile[ty + j, tx] = a[y + j, x]
                cuda.syncthreads()
                x = cuda.blockIdx.y * TILE + tx
                y = cuda.blockIdx.x * TILE + ty
                for j in range(0, TILE, ROWS):
                    if y + j < out.shape[0] and x < out.shape[1]:
                        out[y + j, x] = tile[tx, ty + j]
            """,
            absent=(_TRANSPOSE_GUARD, "more threads than elements"),
        ),
        wrong(
            "sync_inside_the_guard",
            "barrier",
            ("reached by only some threads", "out of the `if`"),
            """
            @cuda.jit
            def transpose_tiled(a, out):
                tile = cuda.shared.array((TILE, TILE + 1), float32)
                tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
                x = cuda.blockIdx.x * TILE + tx
                y = cuda.blockIdx.y * TILE + ty
                inside = y < a.shape[0] and x < a.shape[1]
                if inside:
                    for j in range(0, TILE, ROWS):
                        if y + j < a.shape[0]:
                            tile[ty + j, tx] = a[y + j, x]
                    cuda.syncthreads()
                x = cuda.blockIdx.y * TILE + tx
                y = cuda.blockIdx.x * TILE + ty
                for j in range(0, TILE, ROWS):
                    if y + j < out.shape[0] and x < out.shape[1]:
                        out[y + j, x] = tile[tx, ty + j]
            """,
        ),
    ],
    "stencil_shared": [
        right(
            "halo_by_first_two_threads",
            """
            @cuda.jit
            def stencil_shared(x, out):
                tile = cuda.shared.array(130, float32)
                t = cuda.threadIdx.x
                start = cuda.blockIdx.x * cuda.blockDim.x
                i = start + t
                if i < x.size:
                    tile[t + 1] = x[i]
                else:
                    tile[t + 1] = 0
                if t < 2:
                    k = start - 1 if t == 0 else start + cuda.blockDim.x
                    cell = 0 if t == 0 else cuda.blockDim.x + 1
                    tile[cell] = x[k] if 0 <= k < x.size else 0
                cuda.syncthreads()
                if i < x.size:
                    out[i] = (tile[t] + tile[t + 2]) - 2 * tile[t + 1]
            """,
        ),
        right(
            "tile_starts_one_left",
            """
            @cuda.jit
            def stencil_shared(x, out):
                tile = cuda.shared.array(130, float32)
                t = cuda.threadIdx.x
                first = cuda.blockIdx.x * STENCIL_THREADS - 1  # tile[c] holds x[first + c]
                k = first + t
                tile[t] = x[k] if 0 <= k < x.size else 0.0
                if t < 2:
                    k = first + STENCIL_THREADS + t
                    tile[STENCIL_THREADS + t] = x[k] if 0 <= k < x.size else 0.0
                cuda.syncthreads()
                i = first + 1 + t
                if i < x.size:
                    out[i] = tile[t] - 2.0 * tile[t + 1] + tile[t + 2]
            """,
        ),
        wrong(
            "global_only",
            "efficiency",
            "you read each x from global memory about three times",
            """
            @cuda.jit
            def stencil_shared(x, out):
                i = cuda.grid(1)
                if i < x.size:
                    left = x[i - 1] if i > 0 else 0.0
                    right = x[i + 1] if i + 1 < x.size else 0.0
                    out[i] = left - 2 * x[i] + right
            """,
        ),
        wrong(
            "no_syncthreads",
            "race",
            "put cuda.syncthreads() between the writes to shared memory",
            """
            @cuda.jit
            def stencil_shared(x, out):
                tile = cuda.shared.array(STENCIL_THREADS + 2, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                n = x.size
                tile[t + 1] = x[i] if i < n else 0.0
                if t == 0:
                    tile[0] = x[i - 1] if 0 < i <= n else 0.0
                if t == STENCIL_THREADS - 1:
                    tile[STENCIL_THREADS + 1] = x[i + 1] if i + 1 < n else 0.0
                if i < n:
                    out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]
            """,
            absent=("cuda.syncwarp()",),
        ),
        wrong(
            "no_halo",
            "pattern",
            "wrong only next to block edges",
            """
            @cuda.jit
            def stencil_shared(x, out):
                tile = cuda.shared.array(STENCIL_THREADS + 2, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                tile[t + 1] = x[i] if i < x.size else 0.0
                if t == 0:
                    tile[0] = 0.0
                    tile[STENCIL_THREADS + 1] = 0.0
                cuda.syncthreads()
                if i < x.size:
                    out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]
            """,
        ),
        wrong(
            "wraps_around",
            "pattern",
            "in Numba on a GPU alike, so x[i - 1] at i = 0 silently",
            """
            @cuda.jit
            def stencil_shared(x, out):
                tile = cuda.shared.array(STENCIL_THREADS + 2, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                n = x.size
                tile[t + 1] = x[i % n]  # past the end: wraps to the start
                if t == 0:
                    tile[0] = x[i - 1]  # at i = 0, x[-1] is the last element in Python
                if t == STENCIL_THREADS - 1:
                    tile[STENCIL_THREADS + 1] = x[(i + 1) % n]
                cuda.syncthreads()
                if i < n:
                    out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]
            """,
        ),
        wrong(
            "signs_reversed",
            "pattern",
            "the signs are reversed",
            """
            @cuda.jit
            def stencil_shared(x, out):
                tile = cuda.shared.array(STENCIL_THREADS + 2, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                n = x.size
                tile[t + 1] = x[i] if i < n else 0.0
                if t == 0:
                    tile[0] = x[i - 1] if 0 < i <= n else 0.0
                if t == STENCIL_THREADS - 1:
                    tile[STENCIL_THREADS + 1] = x[i + 1] if i + 1 < n else 0.0
                cuda.syncthreads()
                if i < n:
                    out[i] = 2 * tile[t + 1] - tile[t] - tile[t + 2]
            """,
        ),
        wrong(
            "no_guard",
            "guard",
            _STENCIL_GUARD,
            """
            @cuda.jit
            def stencil_shared(x, out):
                tile = cuda.shared.array(STENCIL_THREADS + 2, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                tile[t + 1] = x[i]
                if t == 0:
                    tile[0] = x[i - 1] if i > 0 else 0.0
                if t == STENCIL_THREADS - 1:
                    tile[STENCIL_THREADS + 1] = x[i + 1] if i + 1 < x.size else 0.0
                cuda.syncthreads()
                out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]
            """,
        ),
        wrong(
            "shape_from_an_expression",
            "not-a-kernel",
            ("does not compile for a GPU", "global constant"),
            """
            @cuda.jit
            def stencil_shared(x, out):
                tile = cuda.shared.array(STENCIL_THREADS + 2, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                n = x.size
                tile[t + 1] = x[i] if i < n else 0.0
                if t == 0:
                    tile[0] = x[i - 1] if 0 < i <= n else 0.0
                if t == STENCIL_THREADS - 1:
                    tile[STENCIL_THREADS + 1] = x[i + 1] if i + 1 < n else 0.0
                cuda.syncthreads()
                if i < n:
                    out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]
            """,
        ),
        wrong(
            "tile_without_halo_cells",
            "shared-overrun",
            ("the tile needs 130 cells", "`cuda.shared.array(130, float32)`"),
            """
            @cuda.jit
            def stencil_shared(x, out):
                tile = cuda.shared.array(STENCIL_THREADS, float32)
                t = cuda.threadIdx.x
                i = cuda.grid(1)
                n = x.size
                tile[t + 1] = x[i] if i < n else 0.0
                if t == 0:
                    tile[0] = x[i - 1] if 0 < i <= n else 0.0
                cuda.syncthreads()
                if i < n:
                    out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]
            """,
            absent=(_STENCIL_GUARD,),
        ),
    ],
}
