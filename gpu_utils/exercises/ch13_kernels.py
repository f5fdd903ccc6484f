"""Lab 13, part 2: the kernels of a decode step (chapter 13, sections 1, 5 and 6).

- ``serving_decode_gemv`` (Numba CUDA): ``y = W x`` for one token, fp32, W (out, in) row-major;
  one block of 64 threads (two warps) per output row, consecutive threads reading consecutive
  columns (the trace asks for coalesced reads), warp shuffles then shared memory for the block's
  sum. In GPU mode a passing kernel is also timed on an 8192 x 8192 matrix and its bandwidth
  stated as a share of a device-to-device copy measured in the same process
  (``gu.inference_kernels``); on the simulator no speed is stated.
- ``serving_int8_gemv`` (Triton, the interpreter on the simulator): weight-only int8 with one
  fp32 scale per group of ``GROUP`` input columns (``gu.inference.quantize``'s format),
  dequantised in the kernel, fp32 accumulation; compared with ``gu.inference.dequantize``'s
  weights times x in float64.
- ``serving_paged_attention`` (Triton): one query token per sequence attends over its cached
  keys and values, read block by block through its row of a block table
  (``gu.inference.PagedAllocator``'s layout, tables scattered by interleaved growth), with an
  online softmax; compared with dense attention on the gathered keys and values in float64.

Hints come from evidence: the checker computes, on the same inputs, what named mistakes would
give (a sum over the first pass only, one warp's or one lane's partial sum, an incomplete
shuffle, a scale per row, the next group's scale, row 0's scales, negative weights read as
unsigned, the tail of the last block attended to, logical block numbers read as physical ones,
an output sum not rescaled, ...) and names the one the answer equals
(``_evidence.match_candidates``); an answer that equals none is told what was observed (another
row's values, a factor, a shift, inf where a float16 sum overflows) and the recipe.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import runtime
from ..serving.inference_kernels import _decode_gemv
from . import _evidence as ev
from ._kernels import (
    Case,
    Mismatch,
    coalesced,
    index_error_target,
    kernel_exercise,
    poisoned,
    random_inputs,
)
from ._kernels import race_hint as _race_hint
from ._registry import CheckResult, register
from ._triton import LaunchError, TritonCase, register_reducer, triton_exercise

CHAPTER = "13_serving"

register_reducer()  # a compiled Triton kernel (GPU mode) travels to the checker by its function

# --- serving_decode_gemv ------------------------------------------------------------------------

THREADS = 64  # two warps per row: shuffles inside each warp, shared memory between them
WARP = 32

GEMV_SIGNATURE = (
    "decode_gemv(w, x, y): w (rows, cols) float32 row-major, x (cols,), y (rows,); y = w @ x. "
    "Block b computes row b: thread t adds w[b, j] * x[j] for j = t, t + 64, ...; shuffles add "
    "up each warp's 32 partial sums, then the two warp sums meet in shared memory"
)
GEMV_LAUNCH = (
    f"1-D: rows blocks of {THREADS} threads (2 warps): row = cuda.blockIdx.x, "
    "t = cuda.threadIdx.x; the grid has exactly one block per row"
)
GEMV_SHAPES = ((1, 1), (3, 2), (2, 3), (3, 3), (2, 33), (9, 100), (3, 200))

_RECIPE = (
    "thread t adds w[row, j] * x[j] for j = t, t + 64, ... (`for j in range(t, w.shape[1], "
    "64):`); then `v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)` for offset = 16, 8, 4, 2, "
    "1 leaves each warp's sum in its lane 0, which writes it to a shared array of 2; after "
    "cuda.syncthreads(), thread 0 writes y[row] = the two warp sums added."
)


def _gemv_case(rng: np.random.Generator, rows: int, cols: int) -> Case:
    w, x = random_inputs(rng, (rows, cols), cols)
    return Case(
        label=f"w {rows}x{cols}",
        griddim=rows,
        blockdim=THREADS,
        inputs=(w, x),
        outputs=poisoned(rows),
        expected=((w.astype(np.float64) @ x).astype(np.float32),),
        rtol=1e-4,
        atol=1e-5 * max(cols, 1) ** 0.5 * 4,
    )


def _gemv_cases(rng: np.random.Generator) -> list[Case]:
    # 1, 2 and 3 rows and columns; rows shorter than a warp (33: one column past it); 9 rows of
    # 100 (two passes of 64, the second partial); 200 columns: four passes, the last partial.
    # Few rows: numba's simulator runs one OS thread per CUDA thread, 64 per row
    return [_gemv_case(rng, rows, cols) for rows, cols in GEMV_SHAPES]


def _thread_partials(w: np.ndarray, x: np.ndarray, step: int = THREADS) -> np.ndarray:
    """(rows, THREADS): what thread t sums when it loops j = t, t + step, ... (float64)."""
    products = w.astype(np.float64) * x
    partials = np.zeros((w.shape[0], THREADS))
    for t in range(min(THREADS, w.shape[1])):
        partials[:, t] = products[:, t::step].sum(axis=1)
    return partials


def _gemv_candidates(case: Case) -> dict[str, np.ndarray]:
    w, x = case.inputs
    rows, cols = w.shape
    products = w.astype(np.float64) * x
    partials = _thread_partials(w, x)
    lanes = partials.reshape(rows, THREADS // WARP, WARP)
    found = {}
    if cols > THREADS:
        found["first pass"] = products[:, :THREADS].sum(axis=1)
    if cols > WARP:
        found["step 32"] = _thread_partials(w, x, WARP).sum(axis=1)
    if cols > 1:
        found["thread 0"] = partials[:, 0]
    if cols > WARP:
        found["warp 0"] = lanes[:, 0].sum(axis=1)
        found["warp 1"] = lanes[:, 1].sum(axis=1)
        found["lane 0s"] = lanes[:, :, 0].sum(axis=1)
    for steps in (1, 2, 3, 4):
        reached = 2**steps
        if cols > reached:
            found[f"lanes {reached}"] = lanes[:, :, :reached].sum(axis=(1, 2))
    if rows == cols and rows > 1:
        found["transposed"] = w.T.astype(np.float64) @ x
    return found


_GEMV_HINTS = {
    "first pass": (
        "only the first 64 columns of each row were summed: a row longer than the block needs "
        "a loop, `for j in range(t, w.shape[1], 64):`, each thread adding every 64th column."
    ),
    "step 32": (
        "columns were counted twice: the loop steps by 32, a warp, but the block has 64 threads, "
        "so threads t and t + 32 both add column t + 32, t + 64, ... Step by 64, the block's "
        "size: `for j in range(t, w.shape[1], 64):`."
    ),
    "thread 0": (
        "y[row] holds only thread 0's own partial sum (columns 0, 64, 128, ...): the other "
        "threads' sums never reached it. Inside each warp, shuffles bring the 32 partial sums "
        "to lane 0 (here the shuffles are missing, or stop short): `v += "
        "cuda.shfl_down_sync(0xFFFFFFFF, v, offset)` for offset = 16, 8, 4, 2, 1; then lane 0 "
        "of each warp hands its sum over through shared memory."
    ),
    "warp 0": (
        "y[row] holds the first warp's sum only (columns j with j % 64 < 32): the second "
        "warp's sum is missing. Its lane 0 (thread 32) must store it in a shared array, and "
        "thread 0 adds both after cuda.syncthreads()."
    ),
    "warp 1": (
        "y[row] holds the second warp's sum only (columns j with j % 64 >= 32): both warps "
        "wrote y[row] and the later write won, or thread 0 read the wrong shared slot. Store "
        "each warp's sum in its own slot (index t // 32), then one thread adds the two."
    ),
    "lane 0s": (
        "only lane 0 of each warp added its own partial sum: the shuffles are missing. Before "
        "lane 0 writes, `v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)` for offset = 16, 8, 4, "
        "2, 1 brings the warp's 32 partial sums into it."
    ),
    "transposed": (
        "you computed w.T @ x: w is stored (out, in), row-major, so row b's weights are "
        "w[b, 0], w[b, 1], ...: read w[row, j], not w[j, row]."
    ),
}


def _gemv_hint(case: Case, mismatch: Mismatch) -> str:
    got = mismatch.got.astype(np.float64)
    if mismatch.unwritten.any() and not mismatch.wrong.any():
        rows = np.flatnonzero(mismatch.unwritten)
        return (
            f"row(s) {ev.describe_indices(rows.tolist())} of y were never written. Each block "
            "owns the row cuda.blockIdx.x, and exactly one of its threads (thread 0) writes "
            "y[row] once the block's sum is complete."
        )
    candidates = _gemv_candidates(case)
    name = ev.match_candidates(got, candidates, rtol=case.rtol, atol=case.atol)
    if name is not None and name.startswith("lanes "):
        reached = int(name.split()[1])
        return (
            f"only lanes 0 to {reached - 1} of each warp reached lane 0's sum: the shuffles need "
            "all five steps, offsets 16, 8, 4, 2 and 1 (`shfl_down_sync`, not `shfl_sync`)."
        )
    if name is not None:
        return _GEMV_HINTS[name]
    if not np.isfinite(got[mismatch.wrong]).all():
        return (
            "some y are NaN or inf: a partial sum read before it was written (a shared slot "
            "read before cuda.syncthreads(), or a lane's value from outside the row) is the "
            "likely cause. " + _RECIPE
        )
    relation = ev.find_relation(got[:, None], mismatch.expected[:, None], rtol=case.rtol)
    observed = ""
    if relation is not None and relation.kind == "other_row":
        sources = [int(v) for v in relation.values]
        observed = (
            f"Observed: the wrong rows hold other rows' results (first: row "
            f"{sources[0]}'s): each block must take its row from cuda.blockIdx.x only. "
        )
    elif relation is not None and relation.kind in ("constant_factor", "offset", "shift"):
        observed = f"Observed: {relation.describe()}. "
    return observed + _RECIPE


def _gemv_error_hint(case: Case, error) -> str:
    w, _ = case.inputs
    rows, cols = w.shape
    if getattr(error, "kind", "") == "warp":
        return (
            "all 32 lanes of a warp must reach every shuffle: a thread with no column (t >= "
            "cols) keeps v = 0 and still takes part; do not return early or put the shuffles "
            "under an `if` that only some lanes take."
        )
    target = index_error_target(case, error)
    axis, size, index = (getattr(error, k, None) for k in ("axis", "size", "index"))
    if target == "shared":
        return (
            "the shared array holds one sum per warp: 2 slots for 64 threads, "
            "`cuda.shared.array(2, float32)`, indexed t // 32 (only lanes 0 write)."
        )
    thread, block = getattr(error, "thread", None), getattr(error, "block", None)
    if (
        thread
        and block
        and index is not None
        and axis == 1
        and size == cols
        and cols <= index < rows
    ):
        lane, block = thread[0], block[0]
        if index % THREADS == lane and index != block:  # the column a thread walks to, not a row
            return (
                f"thread {lane} of row {block} walked to column {index}, past the row's {cols} "
                f"columns but inside the {rows} rows: does its column loop run to w.shape[0], "
                "the number of rows? The columns are w.shape[1]: `for j in range(t, "
                "w.shape[1], 64):`."
            )
    if index is not None and rows != cols and (axis, size) in ((1, cols), (0, rows)):
        swapped = (axis == 1 and index < rows) or (axis == 0 and index < cols)
        if swapped:
            return (
                "w is (rows, cols) = (out, in), row-major: its first index is the output row "
                "(cuda.blockIdx.x), its second the column j: w[row, j], not w[j, row]."
            )
    if size == cols and axis in (0, 1, None):
        return (
            "loop over the row's columns with `for j in range(t, w.shape[1], 64):`, so no "
            "thread reads past the end of the row (a row shorter than 64 leaves some threads "
            "with no column: they keep 0 and still join the shuffles)."
        )
    if size == rows and axis == 0:
        return (
            "there is one block per row and no more: row = cuda.blockIdx.x (not "
            "cuda.grid(1), which counts threads)."
        )
    return ""


def _gemv_race_hint(race) -> str:
    if race.kind == "write-write" and race.space != "shared":
        return (
            f"several threads wrote {race.element}: exactly one thread per row writes y[row] "
            "(thread 0, after adding the two warp sums)."
        )
    return _race_hint(race)


_COALESCING_HINT = (
    "the 32 threads of a warp should read 32 consecutive columns of ONE row: w[row, j] with "
    "j = t, t + 64, ... A thread that sums its own contiguous chunk of the row, or its own row, "
    "makes a warp's 32 reads land in up to 32 different 32-byte sectors."
)


def _timed_on_gpu(exercise) -> object:
    """``exercise``'s run, plus the kernel's bandwidth in GPU mode once it passes."""
    base = exercise.run

    def run(kernel) -> CheckResult:
        result = base(kernel)
        if not result.passed or runtime.mode != "gpu":
            return result
        from ..serving import inference_kernels as ik

        try:
            seconds, rate = ik.time_decode_gemv(kernel, 8192, 8192, THREADS)
            ceiling = ik.copy_ceiling()
        except Exception as error:  # the verdict stands; only the timing is missing
            added = f" (Timing it on the GPU failed: {type(error).__name__}; not timed.)"
        else:
            added = (
                f" On this GPU, an 8192 x 8192 fp32 matrix took {seconds * 1e6:,.0f} us: "
                f"{rate / 1e9:,.0f} GB/s, {100 * rate / ceiling:.0f}% of a device-to-device copy "
                f"measured just now ({ceiling / 1e9:,.0f} GB/s read + written)."
            )
        return dataclasses.replace(result, message=result.message + added, what=result.what + added)

    return dataclasses.replace(exercise, run=run)


register(
    _timed_on_gpu(
        kernel_exercise(
            id="serving_decode_gemv",
            chapter=CHAPTER,
            title="The decode GEMV: one token, one block per row, coalesced",
            signature=GEMV_SIGNATURE,
            launch_text=GEMV_LAUNCH,
            output_names=("y",),
            cases=_gemv_cases,
            hint=_gemv_hint,
            error_hint=_gemv_error_hint,
            race_hint=_gemv_race_hint,
            requirements=(coalesced("w", stores=False, hint=_COALESCING_HINT),),
            # 16 rows: a thread-per-row answer's warp reads 16 rows at once; 256 columns: a
            # chunk per thread is 4 columns, so its warp requests spread over 16 sectors
            trace_case=lambda rng: _gemv_case(rng, 16, 256),
            reference=_decode_gemv,
        )
    )
)


# --- serving_int8_gemv --------------------------------------------------------------------------

INT8_SIGNATURE = (
    "int8_gemv_kernel(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP: tl.constexpr, "
    "BLOCK: tl.constexpr)"
)
INT8_LAUNCH = (
    "int8_gemv_kernel[(rows,)](q, scales, x, y, n_cols, GROUP, BLOCK): one program per output "
    "row; q (rows, n_cols) int8 and scales (rows, n_cols // GROUP) float32, both contiguous, "
    "from gu.inference.quantize(w, bits=8, group=GROUP); x (n_cols,) and y (rows,) float32; "
    "y[r] = sum over c of q[r, c] * scales[r, c // GROUP] * x[c], summed in float32; n_cols is "
    "a multiple of GROUP, not always of BLOCK"
)
#: (rows, n_cols, GROUP, BLOCK, large): large values make a float16 sum overflow (> 65,504)
INT8_CASES = (
    (2, 512, 128, 128, True),  # first: a float16 sum overflows before its rounding shows
    (3, 96, 32, 64, False),  # a block spans two groups; the last block is half empty
    (1, 1, 1, 16, False),
    (2, 6, 2, 4, False),
    (3, 12, 3, 8, False),  # a group of 3: not a power of two
    (5, 256, 128, 64, False),  # the chapter's group of 128: two blocks per group
    (33, 100, 4, 32, False),
)


def _int8_case(rng: np.random.Generator, rows, cols, group, block, large) -> TritonCase:
    import torch

    from ..serving import inference

    if large:  # all positive: each row's sum grows past float16's largest value
        w = rng.uniform(0.5, 1.0, (rows, cols)).astype(np.float32)
        x = rng.uniform(200.0, 300.0, cols).astype(np.float32)
    else:
        w, x = random_inputs(rng, (rows, cols), cols)
    q, scales = inference.quantize(w, bits=8, group=group)
    expected = inference.dequantize(q, scales).astype(np.float64) @ x
    magnitude = float(np.abs(inference.dequantize(q, scales)).max() * np.abs(x).max())
    return TritonCase(
        label=f"{rows} row{'s' * (rows != 1)} of {cols} column{'s' * (cols != 1)}, GROUP = "
        f"{group}, BLOCK = {block}",
        grid=(rows,),
        args={
            "q_ptr": torch.from_numpy(q),
            "scale_ptr": torch.from_numpy(scales),
            "x_ptr": torch.from_numpy(x),
            "y_ptr": torch.full((rows,), float("nan")),
            "n_cols": cols,
        },
        outputs=("y_ptr",),
        expected={"y_ptr": torch.from_numpy(expected.astype(np.float32))},
        constexprs={"GROUP": group, "BLOCK": block},
        rtol=1e-4,
        atol=1e-5 * magnitude * cols**0.5,
        extra={"q": q, "scales": scales, "x": x, "group": group, "block": block},
    )


def _int8_cases(rng: np.random.Generator) -> list[TritonCase]:
    return [_int8_case(rng, *shape) for shape in INT8_CASES]


def _int8_candidates(case: TritonCase) -> dict[str, np.ndarray]:
    q = case.extra["q"].astype(np.float64)
    scales = case.extra["scales"].astype(np.float64)
    x = case.extra["x"].astype(np.float64)
    group, block = case.extra["group"], case.extra["block"]
    rows, cols = q.shape
    groups = cols // group
    column = np.arange(cols)

    def with_scales(per_column: np.ndarray) -> np.ndarray:
        return (q * per_column) @ x

    found = {}
    if groups > 1:
        found["row scale"] = with_scales(scales[:, [0]])
        following = np.concatenate([scales[:, 1:], np.zeros((rows, 1))], axis=1)
        found["next group"] = with_scales(following[:, column // group])
    if rows > 1:
        found["row 0 scales"] = with_scales(scales[[0]][:, column // group])
    if block > group and groups > 1:
        found["block scale"] = with_scales(scales[:, (column // block) * block // group])
    if block != group and cols // block < groups:
        found["group by block"] = with_scales(scales[:, column // block])
    found["no scale"] = q @ x
    blocks = -(-cols // block)
    if blocks > 1:
        per_column = q * scales[:, column // group] * x
        edges = np.arange(0, cols, block)
        partial = np.add.reduceat(per_column, edges, axis=1)  # (rows, blocks)
        found["last block only"] = partial[:, -1]
        if cols % block:
            found["partial block skipped"] = partial[:, :-1].sum(axis=1)
    if (case.extra["q"] < 0).any():
        found["unsigned"] = (np.where(q < 0, q + 256, q) * scales[:, column // group]) @ x
    return found


_INT8_HINTS = {
    "last block only": (
        "each y[r] is the sum over the last block of columns alone: the earlier blocks' sums "
        "were overwritten, not added. Keep one float32 accumulator across the loop over blocks "
        "(created before it) and store `tl.sum(acc, axis=0)` once, after the loop."
    ),
    "partial block skipped": (
        "each y[r] is the sum over every block of columns but the last, partial one: the "
        "number of blocks was rounded down (n_cols // BLOCK). Loop over "
        "`tl.cdiv(n_cols, BLOCK)` blocks and mask the last one's lanes with cols < n_cols."
    ),
    "row scale": (
        "every column of a row used the row's first scale, scales[r, 0]: there is one scale per "
        "group of GROUP columns, so column c needs scales[r, c // GROUP] (load them with the "
        "columns: `tl.load(scale_ptr + row * (n_cols // GROUP) + cols // GROUP, ...)`)."
    ),
    "next group": (
        "each column used the scale of the next group, scales[r, c // GROUP + 1] (and 0 for "
        "the last group): the group index is off by one. Groups count from 0: c // GROUP."
    ),
    "row 0 scales": (
        "every row used row 0's scales: the scale index needs the row's offset too, "
        "row * (n_cols // GROUP) + cols // GROUP (each row has n_cols // GROUP scales)."
    ),
    "block scale": (
        "each block of BLOCK columns used one scale, that of its first column: when BLOCK > "
        "GROUP a block spans several groups. Load a scale per column, scales[r, cols // GROUP] "
        "(a gather: neighbouring columns share it)."
    ),
    "group by block": (
        "the scale index was computed with BLOCK, cols // BLOCK: groups are GROUP columns "
        "wide, whatever the block: cols // GROUP."
    ),
    "no scale": (
        "the weights were used as raw integers: dequantise each one, q * scales[r, c // "
        "GROUP], before multiplying by x[c]."
    ),
    "unsigned": (
        "negative weights counted as 256 + q: q is signed int8 (-127 to 127). Convert it with "
        "`q.to(tl.float32)` (not through tl.uint8) before scaling."
    ),
}


def _int8_hint(case: TritonCase, mismatch: Mismatch) -> str:
    got = mismatch.got.astype(np.float64)
    if mismatch.unwritten.any() and not mismatch.wrong.any():
        rows = np.flatnonzero(mismatch.unwritten)
        return (
            f"row(s) {ev.describe_indices(rows.tolist())} of y were never written: program "
            "`tl.program_id(0)` owns that row and stores `tl.sum(acc, axis=0)` to y_ptr + row "
            "once its loop is over."
        )
    expected = mismatch.expected.astype(np.float64)
    overflow = ~np.isfinite(got) & np.isfinite(expected)
    if overflow.any() and np.abs(expected[overflow]).max() > 65504:
        return (
            f"y is inf where the row's sum is {np.abs(expected[overflow]).max():,.0f}: past "
            "65,504, the largest float16, so the sum (or a product) ran in float16. Accumulate "
            "in float32: `acc = tl.zeros((BLOCK,), dtype=tl.float32)` and `q.to(tl.float32)`."
        )
    name = ev.match_candidates(got, _int8_candidates(case), rtol=case.rtol, atol=case.atol)
    if name is not None:
        return _INT8_HINTS[name]
    relation = ev.find_relation(got[:, None], expected[:, None], rtol=case.rtol, atol=case.atol)
    observed = ""
    if relation is not None and relation.kind not in ("unwritten", "nonfinite", "candidate"):
        observed = f"Observed: {relation.describe()}. "
    return observed + (
        "for each block of columns `cols = start + tl.arange(0, BLOCK)` (mask cols < n_cols), "
        "load q[row, cols], scales[row, cols // GROUP] and x[cols], add `q.to(tl.float32) * "
        "s * x` to a float32 accumulator, and store `tl.sum(acc, axis=0)` at y_ptr + row."
    )


def _int8_error_hint(case: TritonCase, error: LaunchError) -> str:
    tensor = getattr(error, "tensor", "")
    if tensor == "scale_ptr":
        return (
            "the scales are (rows, n_cols // GROUP): column c of row r uses element "
            "r * (n_cols // GROUP) + c // GROUP, and the last block's lanes past n_cols need "
            "the mask too."
        )
    return ""


register(
    triton_exercise(
        id="serving_int8_gemv",
        chapter=CHAPTER,
        title="A weight-only int8 GEMV with group scales, in Triton",
        signature=INT8_SIGNATURE,
        launch_text=INT8_LAUNCH,
        cases=_int8_cases,
        hint=_int8_hint,
        error_hint=_int8_error_hint,
    )
)


# --- serving_paged_attention --------------------------------------------------------------------

PAGED_SIGNATURE = (
    "paged_attention_kernel(q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, max_blocks, "
    "scale, D, BLOCK_SIZE: tl.constexpr, BLOCK_D: tl.constexpr)"
)
PAGED_LAUNCH = (
    "paged_attention_kernel[(sequences,)](q, k_cache, v_cache, table, lens, out, max_blocks, "
    "1 / sqrt(D), D, BLOCK_SIZE, BLOCK_D): one program per sequence; q and out (sequences, D) "
    "float32; k_cache and v_cache (num_blocks, BLOCK_SIZE, D) float32, contiguous; table "
    "(sequences, max_blocks) int32, row s holding sequence s's physical blocks in order "
    "(gu.inference.PagedAllocator's block tables), -1 past them; lens (sequences,) int32, "
    "each at least 1; BLOCK_D the power of two at or above D. out[s] = softmax(scale * q[s] . "
    "K_s) V_s over the lens[s] cached tokens of sequence s"
)
#: (lengths, BLOCK_SIZE, D): partial last blocks, one token, D not a power of two, exact fits
PAGED_CASES = (
    ((5, 20, 1), 4, 8),
    ((1,), 1, 3),
    ((3, 2), 2, 5),
    ((37, 16, 9), 16, 24),
    ((2, 3, 7, 1, 30), 8, 3),
    ((64,), 16, 16),
)


def _allocate(rng: np.random.Generator, lengths, block_size: int):
    """Block tables from ``PagedAllocator``, the sequences growing in turn by 1 to BLOCK_SIZE
    tokens (as a server's steps interleave them), so that tables are scattered."""
    from ..serving import inference

    blocks = sum(-(-n // block_size) for n in lengths)
    cache = inference.PagedAllocator(num_blocks=blocks + 2, block_size=block_size)
    grown = [0] * len(lengths)
    while any(g < n for g, n in zip(grown, lengths, strict=True)):
        for s, n in enumerate(lengths):
            if grown[s] < n:
                step = min(n - grown[s], int(rng.integers(1, block_size + 1)))
                cache.grow(s, step)
                grown[s] += step
    return [cache.block_table(s) for s in range(len(lengths))], blocks + 2


def _paged_case(rng: np.random.Generator, lengths, block_size: int, dim: int) -> TritonCase:
    import torch

    tables, num_blocks = _allocate(rng, lengths, block_size)
    max_blocks = max(len(t) for t in tables) + 1  # a spare column: -1 in every row
    table = np.full((len(lengths), max_blocks), -1, dtype=np.int32)
    for s, blocks in enumerate(tables):
        table[s, : len(blocks)] = blocks
    q = rng.uniform(-2, 2, (len(lengths), dim)).astype(np.float32)
    k = rng.uniform(-2, 2, (num_blocks, block_size, dim)).astype(np.float32)
    v = rng.uniform(-1, 1, (num_blocks, block_size, dim)).astype(np.float32)
    scale = 1.0 / float(np.sqrt(dim))
    lens = np.asarray(lengths, dtype=np.int32)
    expected = _paged_reference(q, k, v, table, lens, scale)
    return TritonCase(
        label=f"lengths {', '.join(map(str, lengths))}, BLOCK_SIZE = {block_size}, D = {dim}",
        grid=(len(lengths),),
        args={
            "q_ptr": torch.from_numpy(q),
            "k_ptr": torch.from_numpy(k),
            "v_ptr": torch.from_numpy(v),
            "table_ptr": torch.from_numpy(table),
            "lens_ptr": torch.from_numpy(lens),
            "out_ptr": torch.full((len(lengths), dim), float("nan")),
            "max_blocks": max_blocks,
            "scale": scale,
            "D": dim,
        },
        outputs=("out_ptr",),
        expected={"out_ptr": torch.from_numpy(expected.astype(np.float32))},
        constexprs={"BLOCK_SIZE": block_size, "BLOCK_D": 1 << (dim - 1).bit_length()},
        rtol=1e-4,
        atol=1e-5,
        extra={"q": q, "k": k, "v": v, "table": table, "lens": lens, "scale": scale},
    )


def _paged_cases(rng: np.random.Generator) -> list[TritonCase]:
    return [_paged_case(rng, *shape) for shape in PAGED_CASES]


def _softmax_rows(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max())
    return e / e.sum()


def _gathered(k, table_row, length, block_size):
    """Sequence's first ``length`` cached rows, read through its table row."""
    blocks = -(-length // block_size)
    return k[table_row[:blocks]].reshape(-1, k.shape[-1])[:length]


def _paged_reference(q, k, v, table, lens, scale) -> np.ndarray:
    """Dense attention of each query over its gathered keys and values, in float64."""
    block_size = k.shape[1]
    out = np.zeros(q.shape)
    for s, n in enumerate(lens):
        keys = _gathered(k, table[s], int(n), block_size).astype(np.float64)
        values = _gathered(v, table[s], int(n), block_size).astype(np.float64)
        out[s] = _softmax_rows(scale * keys @ q[s]) @ values
    return out


def _online(scores, values, block_size, rescale_acc=True, rescale_sum=True, normalise=True):
    """The block-by-block online softmax, with one of its steps left out on request."""
    m, total, acc = -np.inf, 0.0, np.zeros(values.shape[-1])
    for start in range(0, scores.size, block_size):
        s, v = scores[start : start + block_size], values[start : start + block_size]
        m_new = max(m, s.max())
        alpha = np.exp(m - m_new)
        p = np.exp(s - m_new)
        total = (total * alpha if rescale_sum else total) + p.sum()
        acc = (acc * alpha if rescale_acc else acc) + p @ v
        m = m_new
    return acc / total if normalise else acc


def _paged_candidates(case: TritonCase) -> dict[str, np.ndarray]:
    x = case.extra
    q, k, v, table, lens = x["q"], x["k"], x["v"], x["table"], x["lens"]
    block_size, dim = k.shape[1], k.shape[2]
    seqs = range(len(lens))
    flat_k, flat_v = k.reshape(-1).astype(np.float64), v.reshape(-1).astype(np.float64)

    def each(function) -> np.ndarray | None:
        rows = []
        for s in seqs:
            row = function(s, int(lens[s]))
            if row is None:
                return None
            rows.append(row)
        return np.array(rows)

    def dense(s, n, keys, values, scale=x["scale"]):
        return _softmax_rows(scale * keys.astype(np.float64) @ q[s]) @ values.astype(np.float64)

    def own(s, n):
        return _gathered(k, table[s], n, block_size), _gathered(v, table[s], n, block_size)

    def padded(s, n):  # every slot of the sequence's blocks
        blocks = -(-n // block_size)
        return _gathered(k, table[s], blocks * block_size, block_size), _gathered(
            v, table[s], blocks * block_size, block_size
        )

    found = {}
    found["no scale"] = each(lambda s, n: dense(s, n, *own(s, n), scale=1.0))
    if any(n % block_size for n in lens):
        found["tail values"] = each(lambda s, n: dense(s, n, *padded(s, n)))

        def tail_zero(s, n):
            keys, values = own(s, n)
            pad = -(-n // block_size) * block_size - n
            scores = np.concatenate([x["scale"] * keys.astype(np.float64) @ q[s], np.zeros(pad)])
            values = np.concatenate([values.astype(np.float64), np.zeros((pad, dim))])
            return _softmax_rows(scores) @ values

        found["tail zero"] = each(tail_zero)

    def logical(s, n):
        blocks = -(-n // block_size)
        if blocks > k.shape[0]:
            return None
        keys = k[:blocks].reshape(-1, dim)[:n]
        return dense(s, n, keys, v[:blocks].reshape(-1, dim)[:n])

    found["logical blocks"] = each(logical)

    def first_table(s, n):
        blocks = -(-n // block_size)
        if (table[0, :blocks] < 0).any():
            return None
        return dense(
            s,
            n,
            _gathered(k, table[0], n, block_size),
            _gathered(v, table[0], n, block_size),
        )

    if len(lens) > 1:
        found["first table"] = each(first_table)

    def block_stride(s, n):  # the block's offset without BLOCK_SIZE: block * D
        index = []
        for b in range(-(-n // block_size)):
            for t in range(block_size):
                index.append(table[s, b] * dim + t * dim + np.arange(dim))
        index = np.array(index)[:n]
        if index.max() >= flat_k.size:
            return None
        return dense(s, n, flat_k[index], flat_v[index])

    if block_size > 1:
        found["block stride"] = each(block_stride)
    if any(n % block_size for n in lens):  # the slot just past the last token, in its block

        def one_past(s, n):
            n = n + 1 if n % block_size else n
            return dense(s, n, *own(s, n))

        found["one past the end"] = each(one_past)
    padded_d = 1 << (dim - 1).bit_length()
    if padded_d != dim:

        def padded_stride(s, n):  # tokens and blocks laid out with BLOCK_D values, not D
            index = []
            for b in range(-(-n // block_size)):
                for t in range(block_size):
                    index.append((table[s, b] * block_size + t) * padded_d + np.arange(dim))
            index = np.array(index)[:n]
            if index.max() >= flat_k.size:
                return None
            return dense(s, n, flat_k[index], flat_v[index])

        found["padded stride"] = each(padded_stride)
    for name, options in (
        ("acc not rescaled", {"rescale_acc": False}),
        ("sum not rescaled", {"rescale_sum": False}),
        ("not normalised", {"normalise": False}),
    ):

        def variant(s, n, options=options):
            keys, values = own(s, n)
            scores = x["scale"] * keys.astype(np.float64) @ q[s]
            return _online(scores, values.astype(np.float64), block_size, **options)

        found[name] = each(variant)
    return {name: c for name, c in found.items() if c is not None}


_PAGED_HINTS = {
    "no scale": (
        "the scores were not scaled: multiply q . k by `scale` (1 / sqrt(D)) before the softmax."
    ),
    "tail values": (
        "the last block's slots past the sequence's length were attended to: they belong to no "
        "token (a later token of the sequence, or nothing yet). Mask them: positions b * "
        "BLOCK_SIZE + t >= length get a score of -inf (`tl.where(valid, s, float('-inf'))`) and "
        "no load."
    ),
    "tail zero": (
        "the last block's empty slots counted with a score of 0 (the masked load's `other=0`): "
        "exp(0 - m) still adds to the softmax's sum. Give them a score of -inf with "
        "`tl.where(valid, s, float('-inf'))`."
    ),
    "logical blocks": (
        "each sequence read blocks 0, 1, 2, ... of the cache: those are the logical block "
        "numbers. The physical block of logical block b is the table's entry, `tl.load(table_ptr "
        "+ seq * max_blocks + b)`."
    ),
    "first table": (
        "every sequence read the first sequence's block table: its row starts at table_ptr + "
        "seq * max_blocks."
    ),
    "block stride": (
        "a block's keys start at block * BLOCK_SIZE * D in the cache (BLOCK_SIZE tokens of D "
        "values each), not block * D."
    ),
    "one past the end": (
        "one slot past each sequence's last token was attended to: the mask of the last block "
        "keeps positions b * BLOCK_SIZE + t <= length. Positions run from 0 to length - 1: "
        "valid = b * BLOCK_SIZE + t < length."
    ),
    "padded stride": (
        "the cache was addressed with BLOCK_D (D rounded up to a power of two) as the row "
        "length: a token's D values start at (block * BLOCK_SIZE + t) * D. BLOCK_D is only the "
        "width of the tl.arange (mask d < D); the strides in memory use D."
    ),
    "acc not rescaled": (
        "the output sum was not rescaled when the running maximum grew: multiply acc by alpha = "
        "exp(m_old - m_new) before adding the new block's p @ v (as the sum of exp already is)."
    ),
    "sum not rescaled": (
        "the softmax's running sum was not rescaled when the maximum grew: total = total * alpha "
        "+ sum(p), with alpha = exp(m_old - m_new)."
    ),
    "not normalised": (
        "the output was not divided by the softmax's sum: store acc / total at the end."
    ),
}


def _paged_hint(case: TritonCase, mismatch: Mismatch) -> str:
    got = mismatch.got.astype(np.float64)
    if mismatch.unwritten.any() and not mismatch.wrong.any():
        rows = np.flatnonzero(mismatch.unwritten.any(axis=1))
        return (
            f"sequence(s) {ev.describe_indices(rows.tolist())} got no output: program "
            "`tl.program_id(0)` stores its D values at out_ptr + seq * D + d (mask d < D)."
        )
    name = ev.match_candidates(got, _paged_candidates(case), rtol=case.rtol, atol=case.atol * 10)
    if name is not None:
        return _PAGED_HINTS[name]
    if not np.isfinite(got).all():
        return (
            "some outputs are NaN or inf: with a running maximum m that starts at -inf, the "
            "rescale alpha = exp(m - m_new) must use the new maximum, and a score of -inf must "
            "never meet a maximum of -inf (every block here holds at least one token)."
        )
    return (
        "for each logical block b < cdiv(length, BLOCK_SIZE): load its physical block from the "
        "table, the keys at block * BLOCK_SIZE * D + t * D + d, scores scale * (k . q) with -inf "
        "past the length; m_new = max(m, max(s)), alpha = exp(m - m_new), p = exp(s - m_new); "
        "total = total * alpha + sum(p); acc = acc * alpha + p @ v; finally store acc / total."
    )


def _paged_error_hint(case: TritonCase, error: LaunchError) -> str:
    tensor = getattr(error, "tensor", "")
    offsets = getattr(error, "offsets", ())
    if tensor in ("k_ptr", "v_ptr") and offsets and min(offsets) < 0:
        return (
            "a block number was -1: the table holds -1 past each sequence's blocks. Read the "
            "sequence's own row, `tl.load(table_ptr + seq * max_blocks + b)`, and only its "
            "blocks: `for b in range(0, tl.cdiv(length, BLOCK_SIZE))` with length = "
            "tl.load(lens_ptr + seq), not max_blocks."
        )
    if tensor == "table_ptr":
        return (
            "the table is (sequences, max_blocks): sequence seq's entry b is at table_ptr + seq "
            "* max_blocks + b, and only b < cdiv(length, BLOCK_SIZE) belong to it."
        )
    return ""


register(
    triton_exercise(
        id="serving_paged_attention",
        chapter=CHAPTER,
        title="Decode attention over a paged KV cache, with an online softmax, in Triton",
        signature=PAGED_SIGNATURE,
        launch_text=PAGED_LAUNCH,
        cases=_paged_cases,
        hint=_paged_hint,
        error_hint=_paged_error_hint,
    )
)
