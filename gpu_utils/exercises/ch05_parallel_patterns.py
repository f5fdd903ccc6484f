"""Exercises of lab 05, parallel patterns (chapter 05): block reductions, a warp-shuffle final
stage with one atomic per block, an inclusive block scan, a privatised histogram, and a row
softmax (two reductions and a map).

Blocks have 64 threads (two warps): enough to show what happens between warps, few enough for the
simulator's ``syncthreads``. Beyond correct results, each checker looks in the memory trace
(``gu.trace``) for what its exercise is about: races, bank conflicts, divergent warps, coalesced
loads, and how many atomic operations reach global memory.
"""

from __future__ import annotations

import numpy as np

from ._kernels import (
    Case,
    Mismatch,
    TraceRequirement,
    blocks_for,
    coalesced,
    index_error_target,
    kernel_exercise,
    max_divergent_branches,
    no_bank_conflicts,
    poisoned,
    random_inputs,
)
from ._registry import register

CHAPTER = "05_parallel_patterns"
BLOCK = 64  # threads per block: two warps
NBINS = 16  # histogram bins

_SHARED_INDEX_HINT = (
    f"an index into the {BLOCK}-element shared array ran past its end. Index it with the "
    f"thread's index in its block, `t = cuda.threadIdx.x` (0..{BLOCK - 1}), not the global index "
    "`i`; and read `s[t + stride]` only for `t < stride`, with the first stride "
    "`cuda.blockDim.x // 2`."
)
_LOAD_GUARD_HINT = (
    "threads past the end of x must still take part (they hold 0.0), so guard the load, not "
    "the whole kernel: `s[t] = x[i] if i < x.size else 0.0`."
)


def _block_sums(x: np.ndarray, per_block: int) -> np.ndarray:
    padded = np.zeros(blocks_for(x.size, per_block) * per_block, dtype=np.float64)
    padded[: x.size] = x
    return padded.reshape(-1, per_block).sum(axis=1).astype(np.float32)


def _reduction_case(rng: np.random.Generator, n: int, per_block: int) -> Case:
    (x,) = random_inputs(rng, n, low=0.5, high=1.5)  # positive: no cancellation
    blocks = blocks_for(n, per_block)
    return Case(
        label=f"n = {n}",
        griddim=blocks,
        blockdim=BLOCK,
        inputs=(x,),
        outputs=poisoned(blocks),
        expected=(_block_sums(x, per_block),),
        rtol=1e-5,
        atol=1e-5,
        extra={"per_block": per_block},
    )


def _reduction_hint(case: Case, mismatch: Mismatch) -> str:
    (x,) = case.inputs
    got = mismatch.got
    per_block = case.extra["per_block"]
    if mismatch.unwritten.any():
        return (
            "each block writes one partial sum: after the reduction, thread 0 writes "
            "`partial[cuda.blockIdx.x] = s[0]`."
        )
    first = np.array([x[b * per_block] for b in range(got.size)], dtype=np.float32)
    if np.allclose(got, first, rtol=1e-6):
        return "each block wrote its first element only: the loop over strides never ran."
    if per_block == 2 * BLOCK and np.allclose(got, _first_halves(x), rtol=1e-5, atol=1e-5):
        return (
            f"each block covers {2 * BLOCK} elements: thread t of block b adds x[i] and "
            f"x[i + {BLOCK}] with i = b * {2 * BLOCK} + t while loading, before the tree."
        )
    half = np.array(
        [x[b * per_block : b * per_block + per_block // 2].sum() for b in range(got.size)]
    )
    if np.allclose(got, half, rtol=1e-5):
        return "only half of each block's values were summed: the first stride is blockDim.x // 2."
    expected = mismatch.expected.astype(np.float64)
    wrong = ~np.isclose(got, expected, rtol=1e-5, atol=1e-5)
    blocks = np.flatnonzero(wrong) if wrong.any() else np.array([0])
    return (  # no pattern recognised: say what is wrong, and what the algorithm must do
        f"{int(wrong.sum())} of {got.size} partial sums are off (the first is block {blocks[0]}'s: "
        f"yours {got[blocks[0]]:.6g}, the sum of its {per_block} values {expected[blocks[0]]:.6g}). "
        "Each step of the tree must add s[t + stride] into s[t] for t < stride, with the stride "
        "halving from blockDim.x // 2 to 1, and every thread waiting at cuda.syncthreads() before "
        "values written in one step are read in the next."
    )


def _first_halves(x: np.ndarray) -> np.ndarray:
    """Per block of 2*BLOCK elements, the sum of its first BLOCK (the load without the add)."""
    blocks = blocks_for(x.size, 2 * BLOCK)
    padded = np.zeros(blocks * 2 * BLOCK)
    padded[: x.size] = x
    return padded.reshape(blocks, 2, BLOCK)[:, 0].sum(axis=1).astype(np.float32)


def _reduction_error_hint(case: Case, error: str) -> str:
    target = index_error_target(case, error)
    if target == "shared":
        return _SHARED_INDEX_HINT
    if target == "write":
        array = getattr(error, "array", "") or "out"
        return (
            f"threads past the end have no element of `{array}` to write: guard the write, "
            f"`if i < x.size: {array}[i] = ...` (but not the load into shared memory, or the "
            "barriers: every thread of the block still takes part in those)."
        )
    if target == "read":
        return _LOAD_GUARD_HINT
    return ""


# --- reduce_block_sum ---------------------------------------------------------------------------

_SEQUENTIAL_HINT = (
    "use sequential addressing: `stride = cuda.blockDim.x // 2`, then `if t < stride: "
    "s[t] += s[t + stride]`, halving the stride. Active threads stay contiguous, so whole warps "
    "are either busy or idle (no divergence until stride < 32), and consecutive threads touch "
    "consecutive words (no bank conflicts)."
)
_TRACED_REDUCTION_N = 4 * BLOCK  # four full blocks: no guard divergence in the traced launch


def _block_sum_cases(rng: np.random.Generator) -> list[Case]:
    return [_reduction_case(rng, n, BLOCK) for n in (BLOCK, 2 * BLOCK + 1, 37)]


register(
    kernel_exercise(
        id="reduce_block_sum",
        chapter=CHAPTER,
        title="Sum each block's values with a tree in shared memory",
        signature=(
            f"reduce_block_sum(x, partial): x 1-D float32 of n values, partial float32 of "
            f"ceil(n / {BLOCK}); partial[b] = x[b*{BLOCK}] + ... + x[b*{BLOCK} + {BLOCK - 1}] "
            "(values past the end count as 0)"
        ),
        launch_text=f"1-D: {BLOCK} threads per block, ceil(n / {BLOCK}) blocks",
        output_names=("partial",),
        cases=_block_sum_cases,
        hint=_reduction_hint,
        error_hint=_reduction_error_hint,
        requirements=(
            no_bank_conflicts(hint=_SEQUENTIAL_HINT),
            max_divergent_branches(_TRACED_REDUCTION_N // BLOCK, hint=_SEQUENTIAL_HINT),
        ),
        trace_case=lambda rng: _reduction_case(rng, _TRACED_REDUCTION_N, BLOCK),
    )
)


# --- reduce_first_add ---------------------------------------------------------------------------


def _first_add_cases(rng: np.random.Generator) -> list[Case]:
    return [_reduction_case(rng, n, 2 * BLOCK) for n in (2 * BLOCK, 4 * BLOCK + 1, 70)]


register(
    kernel_exercise(
        id="reduce_first_add",
        chapter=CHAPTER,
        title="Halve the threads: add two values while loading",
        signature=(
            f"reduce_first_add(x, partial): x 1-D float32 of n values, partial float32 of "
            f"ceil(n / {2 * BLOCK}); partial[b] = sum of x[b*{2 * BLOCK} : (b+1)*{2 * BLOCK}]"
        ),
        launch_text=(
            f"1-D: {BLOCK} threads per block, ceil(n / {2 * BLOCK}) blocks: each block sums "
            f"{2 * BLOCK} values"
        ),
        output_names=("partial",),
        cases=_first_add_cases,
        hint=_reduction_hint,
        error_hint=_reduction_error_hint,
        requirements=(
            coalesced(  # every global array: the learner's names may differ from x
                stores=False,
                hint=(
                    f"thread t should add x[i] and x[i + {BLOCK}] with i = b * {2 * BLOCK} + t: "
                    "a warp then reads two runs of 32 consecutive values. Reading x[2*i] and "
                    "x[2*i + 1] makes every warp request span twice the sectors."
                ),
            ),
            no_bank_conflicts(hint=_SEQUENTIAL_HINT),
        ),
        trace_case=lambda rng: _reduction_case(rng, 2 * _TRACED_REDUCTION_N, 2 * BLOCK),
    )
)


# --- reduce_warp_shuffle -----------------------------------------------------------------------


def _total_case(rng: np.random.Generator, n: int) -> Case:
    (x,) = random_inputs(rng, n, low=0.5, high=1.5)
    return Case(
        label=f"n = {n}",
        griddim=blocks_for(n, BLOCK),
        blockdim=BLOCK,
        inputs=(x,),
        outputs=(np.zeros(1, dtype=np.float32),),  # the total starts at 0, as for atomics
        expected=(np.array([x.astype(np.float64).sum()], dtype=np.float32),),
        rtol=1e-5,
        atol=1e-5,
    )


def _total_cases(rng: np.random.Generator) -> list[Case]:
    return [_total_case(rng, n) for n in (BLOCK, 2 * BLOCK + 1, 45)]


def _total_hint(case: Case, mismatch: Mismatch) -> str:
    (x,) = case.inputs
    got = float(mismatch.got[0])
    sums = _block_sums(x, BLOCK).astype(np.float64)
    warps = _block_sums(x, 32).astype(np.float64)
    if sums.size > 1 and np.isclose(sums, got, rtol=1e-5).any():
        return (
            "the total equals one block's sum: `total[0] = v` overwrites the other blocks'. "
            "Add each block's sum with `cuda.atomic.add(total, 0, v)`."
        )
    if np.isclose(got, warps[::2].sum(), rtol=1e-5):
        return (
            "only the first warp's values of each block were summed: start warp 0 with both "
            "halves, `v = s[t] + s[t + 32]` for t < 32, then shuffle."
        )
    if np.isclose(got, x[::2].sum(), rtol=1e-5):
        return (
            "only every other value was summed: the shuffles need all five steps, offsets 16, "
            "8, 4, 2 and 1."
        )
    if np.isclose(got, 2 * sums.sum(), rtol=1e-5):
        return "each block's sum was added twice: only lane 0 (t == 0) adds it to the total."
    if np.isclose(got, 32 * sums.sum(), rtol=1e-4):
        return "every lane added the block's sum: only lane 0 (t == 0) should."
    return (
        "warp 0 must end with the block's sum in lane 0: `v += cuda.shfl_down_sync(0xFFFFFFFF, "
        "v, offset)` for offset = 16, 8, 4, 2, 1 (all five steps), with every lane of the warp "
        "taking part; then lane 0 adds v to total[0] atomically."
    )


def _total_error_hint(case: Case, error: str) -> str:
    (x,) = case.inputs
    if getattr(error, "kind", "") == "warp":
        return (
            "all 32 lanes of warp 0 must reach every shuffle: compute v under the condition "
            "(`v = s[t] + s[t + 32]` for t < 32, 0 for lanes without a value) and keep the "
            "shuffles out of any `if` (or `return`) that only some lanes of the warp take."
        )
    if getattr(error, "size", None) == 1 and x.size != 1:  # the 1-element total, indexed
        return (
            "`total` has a single element: every block adds its sum into total[0], "
            "`cuda.atomic.add(total, 0, v)` (one partial sum per block, as in reduce_block_sum, "
            "has no place to go here)."
        )
    return _reduction_error_hint(case, error)


def _partial_warps_in_shared_steps() -> TraceRequirement:
    """No shared-memory tree step on a partly active warp: no line stores to shared memory with 2
    to 31 lanes, or loads from it with more lanes than the block has warps (2 to 31). Single-lane
    stores (s[t // 32] = v) and warp 0 reading one partial sum per warp (s[t] if t < 2) are fine:
    the steps below a whole warp belong to the shuffles."""

    def check(report):
        warps = -(-int(np.prod(report.blockdim)) // 32)
        for line in report.lines:
            for stats, fewest in ((line.shared_stores, 1), (line.shared_loads, warps)):
                if not stats.requests:
                    continue
                lanes = stats.accesses / stats.requests
                if fewest < lanes < 32:
                    divergent = [s for s in report.lines if s.divergent_branches]
                    at = f" after warps diverge at `{divergent[0].source}`" if divergent else ""
                    what = (
                        f"shared-memory steps at {line.where} (`{line.source}`) run on partly idle "
                        f"warps ({lanes:.1f} of 32 lanes per request on average){at}."
                    )
                    return what, (
                        "once fewer than 32 values are left, stop using shared memory and "
                        "`if t < stride`: let warp 0 finish with `v += cuda.shfl_down_sync("
                        "0xFFFFFFFF, v, offset)` for offset = 16, 8, 4, 2, 1. All 32 lanes run "
                        "every step: no divergence, no syncthreads."
                    )
        return None

    return TraceRequirement(
        "no divergent warp in the final stage (it uses shuffles)", check, needs_divergence=True
    )


register(
    kernel_exercise(
        id="reduce_warp_shuffle",
        chapter=CHAPTER,
        title="Final stage with warp shuffles, one atomic per block",
        signature=(
            "reduce_warp_shuffle(x, total): x 1-D float32 of n values, total a 1-element float32 "
            "array set to 0; afterwards total[0] holds the sum of x. Each block sums its 64 values "
            "(s[t] + s[t + 32] in shared memory, then shuffles within warp 0) and lane 0 adds the "
            "block's sum to total[0] with cuda.atomic.add"
        ),
        launch_text=f"1-D: {BLOCK} threads per block, ceil(n / {BLOCK}) blocks",
        output_names=("total",),
        cases=_total_cases,
        hint=_total_hint,
        error_hint=_total_error_hint,
        requirements=(_partial_warps_in_shared_steps(),),
        trace_case=lambda rng: _total_case(rng, _TRACED_REDUCTION_N),
    )
)


# --- block_scan ----------------------------------------------------------------------------------


def _block_scan_expected(x: np.ndarray, per_block: int = BLOCK) -> np.ndarray:
    out = np.empty(x.size, dtype=np.float64)
    for start in range(0, x.size, per_block):
        out[start : start + per_block] = np.cumsum(x[start : start + per_block], dtype=np.float64)
    return out.astype(np.float32)


def _window_sums(x: np.ndarray, width: int) -> np.ndarray:
    """Within each block, out[i] = the sum of the last ``width`` values up to x[i]: what
    Hillis-Steele computes when its offsets stop at width / 2."""
    scan = _block_scan_expected(x).astype(np.float64)
    out = scan.copy()
    for i in range(x.size):
        start = (i // BLOCK) * BLOCK
        if i - width >= start:
            out[i] = scan[i] - scan[i - width]
    return out.astype(np.float32)


def _scan_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for n in (BLOCK, 90, 2 * BLOCK + 1):
        (x,) = random_inputs(rng, n, low=0.5, high=1.5)
        cases.append(
            Case(
                label=f"n = {n}",
                griddim=blocks_for(n, BLOCK),
                blockdim=BLOCK,
                inputs=(x,),
                outputs=poisoned(n),
                expected=(_block_scan_expected(x),),
                rtol=1e-5,
                atol=1e-5,
            )
        )
    return cases


def _scan_hint(case: Case, mismatch: Mismatch) -> str:
    (x,) = case.inputs
    got = mismatch.got
    expected = mismatch.expected
    if np.allclose(got, expected - x, rtol=1e-5, atol=1e-5):
        return "that is the exclusive scan: the inclusive one adds x[i] itself too, out[i] = x[0] + ... + x[i]."
    if np.allclose(got, _window_sums(x, BLOCK // 2), rtol=1e-5, atol=1e-5):
        return (
            f"each output sums only the last {BLOCK // 2} values: the offsets must run 1, 2, 4, "
            f"..., {BLOCK // 2}, while offset < cuda.blockDim.x."
        )
    if mismatch.unwritten.any():
        return "every thread writes its own element: `out[i] = s[t]` for i < x.size."
    if np.allclose(got, _block_suffix_sums(x), rtol=1e-5, atol=1e-5):
        return (
            "each output sums x[i] and the values AFTER it in the block: the inclusive scan "
            "adds the values before it, so thread t adds s[t - offset] (for t >= offset), not "
            "s[t + offset]."
        )
    wrong = np.flatnonzero(~np.isclose(got, expected, rtol=1e-5, atol=1e-5)) if got.size else [0]
    wrong = wrong if len(wrong) else [0]
    return (  # no pattern recognised: say what is wrong, and what the algorithm must do
        f"out[{wrong[0]}] should be x[{(wrong[0] // BLOCK) * BLOCK}] + ... + x[{wrong[0]}] = "
        f"{expected[wrong[0]]:.6g}. Hillis-Steele: for offset = 1, 2, 4, ..., 32, every thread "
        "with t >= offset adds s[t - offset], and all the reads of a step happen before any "
        "write of it (a local variable and cuda.syncthreads() between them, or two buffers)."
    )


def _block_suffix_sums(x: np.ndarray) -> np.ndarray:
    """Within each block of BLOCK values, x[i] + ... + x[end of block]: a scan run backwards."""
    out = np.empty(x.size, dtype=np.float64)
    for start in range(0, x.size, BLOCK):
        part = x[start : start + BLOCK].astype(np.float64)
        out[start : start + BLOCK] = np.cumsum(part[::-1])[::-1]
    return out.astype(np.float32)


register(
    kernel_exercise(
        id="block_scan",
        chapter=CHAPTER,
        title="Inclusive scan of each block (Hillis-Steele)",
        signature=(
            f"block_scan(x, out): x and out 1-D float32 of n values; within each block of {BLOCK} "
            f"elements, out[i] = x[start] + ... + x[i], where start = (i // {BLOCK}) * {BLOCK}"
        ),
        launch_text=f"1-D: {BLOCK} threads per block, ceil(n / {BLOCK}) blocks",
        output_names=("out",),
        cases=_scan_cases,
        hint=_scan_hint,
        error_hint=_reduction_error_hint,
    )
)


# --- histogram_shared ----------------------------------------------------------------------------


def _histogram_case(rng: np.random.Generator, n: int) -> Case:
    values = rng.integers(0, NBINS, size=n).astype(np.int32)
    values[: min(n, 8)] = 3  # a popular bin: atomics on it collide
    values[-1] = NBINS - 1  # the last bin is always used: an index one past it always shows
    return Case(
        label=f"n = {n}",
        griddim=blocks_for(n, BLOCK),
        blockdim=BLOCK,
        inputs=(values,),
        outputs=(np.zeros(NBINS, dtype=np.int32),),
        expected=(np.bincount(values, minlength=NBINS).astype(np.int32),),
        rtol=0,
        atol=0,
    )


def _histogram_cases(rng: np.random.Generator) -> list[Case]:
    return [_histogram_case(rng, n) for n in (BLOCK, 300, 5)]


def _histogram_hint(case: Case, mismatch: Mismatch) -> str:
    (values,) = case.inputs
    got, expected = mismatch.got.astype(np.int64), mismatch.expected.astype(np.int64)
    blocks = case.griddim
    if (got < 0).any() or (got > values.size).any():
        return (
            f"some bins hold impossible counts (below 0 or above n = {values.size}): the shared "
            "bins start with whatever was in shared memory. Initialise the shared bins to 0 "
            "(threads t < 16: `local[t] = 0`) and cuda.syncthreads() before counting."
        )
    if blocks > 1:
        last = values[(blocks - 1) * BLOCK :]
        if np.array_equal(got, np.bincount(last, minlength=NBINS)):
            return (
                "the bins hold the last block's counts only: `bins[t] = local[t]` overwrites "
                "the other blocks'. Add with `cuda.atomic.add(bins, t, local[t])`."
            )
    if (got >= expected).all() and got.sum() > expected.sum():
        return (
            "some bins are too high: zero the shared bins first (threads t < 16: `local[t] = 0`, "
            "then cuda.syncthreads()); shared memory starts with whatever was there before."
        )
    if got.sum() < expected.sum():
        return (
            "counts are missing: increment the shared bins with `cuda.atomic.add(local, v, 1)` "
            "(`local[v] += 1` loses updates when threads collide) and call cuda.syncthreads() "
            "before the block adds its bins to global memory."
        )
    return "each value v adds 1 to bin v: count in shared memory, then add the 16 totals to bins."


def _few_global_atomics() -> TraceRequirement:
    """The global histogram receives one warp-wide atomic request per block (16 bins, one warp)."""

    def check(report):
        # atomics on global memory go to the bins only (whatever the learner named them)
        requests = sum(a.atomics for a in report.arrays.values() if a.space == "global")
        blocks = int(np.prod(report.griddim))
        if requests <= blocks * -(-NBINS // 32):
            return None
        what = (
            f"{requests} warp-wide atomic requests reached `bins` in global memory from "
            f"{blocks} blocks; one per block (its 16 bins added by one warp at once) is the goal."
        )
        return what, (
            "privatise: count into a shared array of 16 bins (`cuda.atomic.add(local, v, 1)`), "
            "then, after cuda.syncthreads(), threads t < 16 each add one bin's block total, all "
            "in the same step: `cuda.atomic.add(bins, t, local[t])` (not a loop in one thread)."
        )

    return TraceRequirement("one atomic request to global `bins` per block", check)


def _histogram_error_hint(case: Case, error: str) -> str:
    bounds = getattr(error, "size", None)
    if bounds == NBINS and index_error_target(case, error) in ("shared", ""):
        return (
            f"a bin index is the value itself: values lie in 0..{NBINS - 1}, and value v adds 1 "
            f"to bin v, `cuda.atomic.add(local, values[i], 1)`; the {NBINS} bins have indices "
            f"0..{NBINS - 1}."
        )
    return ""


register(
    kernel_exercise(
        id="histogram_shared",
        chapter=CHAPTER,
        title="Histogram with a private copy per block in shared memory",
        signature=(
            f"histogram_shared(values, bins): values 1-D int32 in [0, {NBINS}), bins int32 of "
            f"{NBINS} set to 0; afterwards bins[v] counts the values equal to v"
        ),
        launch_text=f"1-D: {BLOCK} threads per block, ceil(n / {BLOCK}) blocks",
        output_names=("bins",),
        cases=_histogram_cases,
        hint=_histogram_hint,
        guard_hint="guard the count with `if i < values.size:` so threads past the end add nothing.",
        error_hint=_histogram_error_hint,
        requirements=(_few_global_atomics(),),
        trace_case=lambda rng: _histogram_case(rng, 4 * BLOCK),
    )
)


# --- softmax_rows --------------------------------------------------------------------------------


def _softmax(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)


def _softmax_case(
    rng: np.random.Generator, rows: int, cols: int, scale: float, negative_row: int | None = None
) -> Case:
    """Values in [-scale, scale]; ``negative_row``, if given, holds only values from -120 to -100:
    float32's exp(x) is subnormal below -87.3 and 0 below -103.9, so only exp(x - max) works."""
    x = rng.uniform(-scale, scale, size=(rows, cols)).astype(np.float32)
    label = f"x {rows}x{cols}" + (f" with values up to {scale:g}" if scale > 10 else "")
    if negative_row is not None:
        x[negative_row] = rng.uniform(-120.0, -100.0, size=cols).astype(np.float32)
        label += f" whose row {negative_row} is all very negative (-120 to -100)"
    return Case(
        label=label,
        griddim=rows,
        blockdim=BLOCK,
        inputs=(x,),
        outputs=poisoned((rows, cols)),
        expected=(_softmax(x),),
        rtol=1e-4,
        atol=1e-6,
    )


def _softmax_cases(rng: np.random.Generator) -> list[Case]:
    # a row of exactly one block; rows longer than the block (and with large values, where
    # exp overflows unless the maximum is subtracted); rows shorter than a warp; rows one column
    # longer than the block, one of them all very negative (a running maximum that starts at 0
    # instead of -inf gives 0 / 0 there); rows of a single column
    return [
        _softmax_case(rng, 1, BLOCK, 3.0),
        _softmax_case(rng, 2, 100, 100.0),
        _softmax_case(rng, 1, 7, 3.0),
        _softmax_case(rng, 3, BLOCK + 1, 3.0, negative_row=1),
        _softmax_case(rng, 2, 1, 3.0),
    ]


def _first_columns_reduced(x: np.ndarray, got: np.ndarray) -> bool:
    """Whether ``got`` is a softmax whose sum (and maybe its maximum) covers only the first BLOCK
    columns of each row, as float32 would compute it (overflows where x - m exceeds 88)."""
    x64, head = x.astype(np.float64), x.astype(np.float64)[:, :BLOCK]
    for m in (x64.max(axis=1, keepdims=True), head.max(axis=1, keepdims=True)):
        finite = x64 - m < 88.0
        with np.errstate(over="ignore"):
            candidate = np.exp(x64 - m) / np.exp(head - m).sum(axis=1, keepdims=True)
        if np.isfinite(got[~finite]).any() or not np.isfinite(got[finite]).all():
            continue
        if np.allclose(got[finite], candidate[finite], rtol=1e-3, atol=1e-6):
            return True
    return False


def _softmax_hint(case: Case, mismatch: Mismatch) -> str:
    (x,) = case.inputs
    got = mismatch.got.astype(np.float64)
    unwritten = mismatch.unwritten
    if x.shape[1] > BLOCK and unwritten[:, BLOCK:].all() and not unwritten[:, :BLOCK].any():
        return (
            f"only the first {BLOCK} columns were written: with {BLOCK} threads per row, thread t "
            f"handles columns t, t + {BLOCK}, t + {2 * BLOCK}, ... "
            "(`for j in range(t, x.shape[1], cuda.blockDim.x):`)."
        )
    if x.shape[1] > BLOCK and _first_columns_reduced(x, got):
        return (
            f"the maximum or the sum covers only the first {BLOCK} columns: in both reductions "
            f"each thread must first combine all its columns t, t + {BLOCK}, ... "
            "(`for j in range(t, x.shape[1], cuda.blockDim.x):`) before the block reduction."
        )
    with np.errstate(over="ignore"):
        overflows = ~np.isfinite(np.exp(x))  # where float32 exp(x) overflows
    nonfinite = ~np.isfinite(got)
    if nonfinite.any() and not (nonfinite & ~overflows).any():
        return (
            "exp overflows float32 for inputs near 100 (exp(89) is already infinite): subtract "
            "the row's maximum first, exp(x - max), as every library softmax does."
        )
    x64 = x.astype(np.float64)
    bad_rows = (unwritten | mismatch.wrong).any(axis=1)
    very_negative = x.max(axis=1) < -87.0  # float32 exp(x) is subnormal or 0 across the row
    if bad_rows.any() and (very_negative[bad_rows]).all() and not very_negative.all():
        return (
            "only the rows whose values are all very negative came out wrong: there exp(x - m) "
            "underflows (to 0, or to imprecise subnormal numbers) unless m is the row's own "
            "maximum, which is below 0. Start "
            "each thread's running maximum at -inf (`m = -math.inf`), not 0.0, so that a row "
            "with no positive value still gets its own maximum."
        )
    sums = np.exp(x64 - x64.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)
    if np.allclose(got, np.exp(x64 - sums) / sums, rtol=1e-4, atol=1e-7):
        return (
            "the maximum was overwritten by the sum: after the sum reduction the shared array "
            "holds S, not m. Copy m into a local variable (`m = s[0]`) before reusing the array."
        )
    if unwritten.any():
        return "every element of the row needs a thread that writes it."
    if np.allclose(got.sum(axis=1), 1, atol=1e-3):
        return (
            "each row sums to 1 but the values are off: every thread must use the same maximum, "
            "read from shared memory only after the max reduction has finished (cuda.syncthreads())."
        )
    return (
        "two block reductions per row: the maximum m of the row, then the sum S of exp(x - m); "
        "then out[row, j] = exp(x[row, j] - m) / S. Every thread must read the finished m and S "
        "(cuda.syncthreads() between writing them and reading them)."
    )


def _softmax_error_hint(case: Case, error: str) -> str:
    target = index_error_target(case, error)
    if target == "shared":
        return _SHARED_INDEX_HINT
    if target in ("read", "write"):
        return (
            "loop over the row's columns with `for j in range(t, x.shape[1], cuda.blockDim.x):` "
            "so no thread reads or writes past the end of the row, and use blockIdx.x as the row."
        )
    return ""


register(
    kernel_exercise(
        id="softmax_rows",
        chapter=CHAPTER,
        title="Softmax of each row: a max and a sum reduction per block",
        signature=(
            "softmax_rows(x, out): x and out float32 (rows, cols); out[r, j] = exp(x[r, j] - m) / "
            "S with m the maximum of row r and S the sum of exp(x[r, :] - m); cols may exceed 64"
        ),
        launch_text=f"1-D: one block of {BLOCK} threads per row (grid = rows)",
        output_names=("out",),
        cases=_softmax_cases,
        hint=_softmax_hint,
        error_hint=_softmax_error_hint,
    )
)
