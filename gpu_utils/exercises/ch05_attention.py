"""Exercises of lab 05, fused kernels (chapter 05, section 5): an online softmax (Milakov and
Gimelshein 2018, "Online normalizer calculation for softmax", arXiv 1805.02867, Algorithm 3 and
the merge operator of its parallel form) and
one tile of attention built on it (Dao et al. 2022, "FlashAttention", arXiv 2205.14135, section
3.1, Algorithm 1).

``online_softmax``: one warp per row keeps a running maximum m and sum d (d = d * exp(m_old -
m_new) + exp(x - m_new)), merges the lanes' (m, d) pairs with shuffles, and reads x twice (once
for m and d, once for the output) where the two-reduction softmax reads it three times; the trace
checks the reads. ``attention_tile``: one thread per query keeps (m, d, acc) while K and V stream
through shared memory in tiles; the trace checks that the score matrix never reaches global memory
(the ``scratch`` buffer stays untouched) and that K and V are read once per block.
"""

from __future__ import annotations

import math

import numpy as np

from . import ch05_parallel_patterns  # noqa: F401 - its exercises come first in the lab
from ._kernels import (
    Case,
    Mismatch,
    TraceRequirement,
    blocks_for,
    index_error_target,
    kernel_exercise,
    max_loads_per_element,
    poisoned,
)
from ._registry import register

CHAPTER = "05_parallel_patterns"
WARP = 32  # online_softmax: one warp per row
BLOCK_Q = 64  # attention_tile: queries per block, one per thread
HEAD_DIM = 8  # attention_tile: columns of q, k and v

# --- online_softmax ------------------------------------------------------------------------------


def _softmax(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)


def _online_case(
    rng: np.random.Generator, rows: int, cols: int, scale: float, negative_row: int | None = None
) -> Case:
    """Values in [-scale, scale]; ``negative_row`` holds values from -744 to -738: exp(x) is 0
    there in float32 (a GPU: d = 0, 0 / 0) and a subnormal number with a few bits of precision in
    float64 (the simulator's Python scalars: finite but wrong), so only exp(x - m) with m the
    row's own maximum gives the right values on both."""
    x = rng.uniform(-scale, scale, size=(rows, cols)).astype(np.float32)
    label = f"x {rows}x{cols}" + (f" with values up to {scale:g}" if scale > 10 else "")
    if negative_row is not None:
        x[negative_row] = rng.uniform(-744.0, -738.0, size=cols).astype(np.float32)
        label += f" whose row {negative_row} is all very negative (-744 to -738)"
    return Case(
        label=label,
        griddim=rows,
        blockdim=WARP,
        inputs=(x,),
        outputs=poisoned((rows, cols)),
        expected=(_softmax(x),),
        rtol=1e-4,
        atol=1e-6,
    )


def _online_cases(rng: np.random.Generator) -> list[Case]:
    # one column per lane (the per-element update is trivial, only the merge of lanes matters);
    # several columns per lane; the same with values up to 1000 (exp overflows without the maximum, even
    # in the float64 arithmetic of the simulator's Python scalars); fewer
    # columns than lanes (lanes with no column hold (-inf, 0)); a row just over a warp that is
    # all very negative; a single column
    return [
        _online_case(rng, 1, WARP, 3.0),
        _online_case(rng, 2, 100, 3.0),
        _online_case(rng, 2, 100, 1000.0),
        _online_case(rng, 1, 7, 3.0),
        _online_case(rng, 3, WARP + 1, 3.0, negative_row=1),
        _online_case(rng, 2, 1, 3.0),
    ]


def _proportional_rows(got: np.ndarray, expected: np.ndarray) -> bool:
    """Every row of ``got`` is a positive multiple of the softmax: only the normaliser is off."""
    if not np.isfinite(got).all() or (got <= 0).any():
        return False
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = got / expected.astype(np.float64)
        return bool(np.allclose(ratio, ratio[:, :1], rtol=1e-3))


_RESCALE_ELEMENT = (
    "when a lane meets a larger element, its sum so far was taken relative to the old maximum: "
    "rescale it, `d = d * math.exp(m - m_new) + math.exp(x[row, j] - m_new)`, then `m = m_new`."
)
_RESCALE_MERGE = (
    "merging two partial pairs (m_a, d_a) and (m_b, d_b) must bring both sums to the common "
    "maximum m = max(m_a, m_b): d = d_a * exp(m_a - m) + d_b * exp(m_b - m). Adding the sums "
    "as they are (or keeping only one) gives a wrong normaliser."
)


def _online_hint(case: Case, mismatch: Mismatch) -> str:
    (x,) = case.inputs
    got = mismatch.got.astype(np.float64)
    bad_rows = (mismatch.unwritten | mismatch.wrong).any(axis=1)
    very_negative = x.max(axis=1) < -700.0
    if bad_rows.any() and very_negative[bad_rows].all() and not very_negative.all():
        return (
            "only the rows whose values are all very negative came out wrong: there exp(x - m) "
            "is 0 unless m is the row's own maximum, which is below 0, and d ends up 0. Start "
            "the running maximum at -inf (`m = -math.inf`), not 0.0."
        )
    with np.errstate(over="ignore"):
        overflows = ~np.isfinite(np.exp(x))
    nonfinite = ~np.isfinite(got)
    if nonfinite.any() and overflows.any() and not (nonfinite & ~overflows).any():
        return (
            "exp overflows for large inputs (float32 above 88, float64 above 709): compute "
            "exp(x - m) with the running maximum m, never exp(x) alone."
        )
    if nonfinite.any() and x.shape[1] < WARP:
        return (
            "NaN with fewer columns than lanes: a lane with no column holds (m, d) = (-inf, 0), "
            "and merging two such pairs computes exp(-inf - (-inf)) = exp(nan). Skip the "
            "rescale when a maximum is -inf (`if m_b == -math.inf:` keep (m_a, d_a)), or "
            "rescale with `0.0 if m_a == -math.inf else math.exp(m_a - m)`."
        )
    if mismatch.unwritten.any() and not mismatch.wrong.any():
        return (
            "some elements were never written: after the row's (m, d) is known, every lane "
            "writes its columns, `for j in range(lane, x.shape[1], 32): out[row, j] = "
            "math.exp(x[row, j] - m) / d`."
        )
    if _proportional_rows(got, mismatch.expected):
        if x.shape[1] <= WARP:  # at most one column per lane: the merge is at fault
            return "each row is proportional to the softmax, but the sum d is wrong: " + (
                _RESCALE_MERGE
            )
        return (
            "each row is proportional to the softmax, but the sum d is wrong (it was right "
            "with one column per lane, wrong with several): " + _RESCALE_ELEMENT
        )
    bad = mismatch.wrong | mismatch.unwritten
    others = np.ones(x.shape[1], bool)
    others[::WARP] = False
    if x.shape[1] > 1 and not bad[:, ::WARP].any() and bad[:, others].mean() > 0.5:
        return (
            "only lane 0's columns (0, 32, 64, ...) are right: lane 0 ends the merge with the "
            "row's (m, d), the other lanes with partial pairs. Merge with a butterfly, "
            "`cuda.shfl_xor_sync(0xFFFFFFFF, m, offset)`, which leaves the result in every lane, "
            "or broadcast lane 0's pair with `m = cuda.shfl_sync(0xFFFFFFFF, m, 0)` (and d)."
        )
    return (
        "for each column, m_new = max(m, x); d = d * exp(m - m_new) + exp(x - m_new); m = "
        "m_new. Then merge the 32 lanes' pairs with shuffles, and write out[row, j] = "
        "exp(x[row, j] - m) / d."
    )


def _online_error_hint(case: Case, error: str) -> str:
    if getattr(error, "kind", "") == "warp":
        return (
            "every lane must take part in each shuffle, even a lane with no column (it brings "
            "(m, d) = (-inf, 0)): call `cuda.shfl_xor_sync(0xFFFFFFFF, ...)` outside any `if`."
        )
    if index_error_target(case, error) in ("read", "write"):
        return (
            "loop over the row's columns with `for j in range(lane, x.shape[1], 32):` so no lane "
            "reads or writes past the end of the row, and use blockIdx.x as the row."
        )
    return ""


_TWO_PASS_HINT = (
    "that is the two-reduction softmax: one pass for the maximum, one for the sum, one for the "
    "output. Keep the maximum and the sum together, d = d * exp(m_old - m_new) + exp(x - m_new), "
    "so one pass gives both, and the second pass writes the output."
)

register(
    kernel_exercise(
        id="online_softmax",
        chapter=CHAPTER,
        title="Online softmax: running maximum and sum in one pass, lanes merged by shuffles",
        signature=(
            "online_softmax(x, out): x and out float32 (rows, cols); out[r, j] = exp(x[r, j] - m) "
            "/ d with m the maximum of row r and d the sum of exp(x[r, :] - m); x read at most "
            "twice per element"
        ),
        launch_text=f"1-D: one warp ({WARP} threads) per row, grid = rows",
        output_names=("out",),
        cases=_online_cases,
        hint=_online_hint,
        error_hint=_online_error_hint,
        requirements=(max_loads_per_element("x", 2.0, _TWO_PASS_HINT),),
        trace_case=lambda rng: _online_case(rng, 4, 3 * WARP, 3.0),
    )
)


# --- attention_tile ------------------------------------------------------------------------------


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float | None = None):
    """softmax(q k^T * scale) v in float64 (scale 1/sqrt(head dim) by default)."""
    scale = 1.0 / math.sqrt(q.shape[1]) if scale is None else scale
    scores = q.astype(np.float64) @ k.astype(np.float64).T * scale
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


def _attention_case(rng: np.random.Generator, n: int, spread: float) -> Case:
    q, k = (rng.uniform(-spread, spread, size=(n, HEAD_DIM)).astype(np.float32) for _ in "qk")
    v = rng.uniform(-1.0, 1.0, size=(n, HEAD_DIM)).astype(np.float32)
    label = f"n = {n}" + (f" with q and k up to {spread:g} (large scores)" if spread > 3 else "")
    return Case(
        label=label,
        griddim=blocks_for(n, BLOCK_Q),
        blockdim=BLOCK_Q,
        inputs=(q, k, v, np.full((n, n), np.nan, np.float32)),
        outputs=poisoned((n, HEAD_DIM)),
        expected=(attention(q, k, v).astype(np.float32),),
        # float32 sums over n <= 72 keys of values up to 1 differ by order n x 1.2e-7 ~ 1e-5 with
        # the order of summation: an output near 0 (cancellation) needs that much absolute room.
        rtol=1e-3,
        atol=1e-4,
        writable_inputs=(3,),
    )


def _attention_cases(rng: np.random.Generator) -> list[Case]:
    # one block and one key tile; a last key tile that is partly past n (and a second block);
    # scores up to about 1000 (exp overflows without the running maximum, even in float64);
    # a single query and key
    return [
        _attention_case(rng, BLOCK_Q, 2.0),
        _attention_case(rng, BLOCK_Q + 36, 2.0),
        _attention_case(rng, 72, 30.0),
        _attention_case(rng, 1, 2.0),
    ]


def _attention_hint(case: Case, mismatch: Mismatch) -> str:
    q, k, v, _ = case.inputs
    n = q.shape[0]
    got = mismatch.got.astype(np.float64)
    if np.isfinite(got).all() and np.allclose(got, attention(q, k, v, 1.0), rtol=1e-3, atol=1e-5):
        return (
            f"your result is softmax(q k^T) v without the scale: the scores are q . k / "
            f"sqrt(d) with d = {HEAD_DIM} columns, `* (1.0 / math.sqrt({HEAD_DIM}))`, which "
            "keeps the softmax from saturating as d grows (Vaswani et al. 2017, section 3.2.1)."
        )
    nonfinite = ~np.isfinite(got)
    if nonfinite.any():
        scores = q.astype(np.float64) @ k.astype(np.float64).T / math.sqrt(HEAD_DIM)
        if np.abs(scores).max() > 80:
            return (
                "inf or NaN where the scores are large: exp overflows float32 above 88. Keep a "
                "running maximum m of each query's scores and use exp(s - m); when m grows, "
                "rescale d and acc by exp(m_old - m_new)."
            )
        return (
            "NaN in the output: a query's running state must start at m = -math.inf, d = 0.0 "
            "and acc = 0.0, and a rescale exp(m_old - m_new) with m_old = -inf is 0 (only "
            "-inf - (-inf) is NaN)."
        )
    rows_wrong = (mismatch.wrong | mismatch.unwritten).any(axis=1)
    if n % BLOCK_Q and n > BLOCK_Q and rows_wrong.mean() >= 0.9:
        # keys past n in the last tile change every row; a missing rescale of acc only the rows
        # whose maximum moved to a later tile
        return (
            f"nearly every row is wrong when n = {n} is not a multiple of the key tile: the last "
            f"tile has only {n % BLOCK_Q} keys. Use only keys j < n in the scores (skip the "
            "rest of the tile, whatever shared memory holds there)."
        )
    for missing in ("acc", "d", "both"):
        if _matches_a_missing_rescale(q, k, v, got, missing):
            what = {"acc": "the accumulator", "d": "the sum d", "both": "the sum and acc"}[missing]
            return (
                f"your output matches {what} never being rescaled. When a key (or a tile) raises "
                "a query's running maximum from m_old to m_new, both the sum and the accumulator "
                "were taken relative to m_old: `r = math.exp(m_old - m_new)`, `d = d * r + p`, "
                "and every `acc[c] = acc[c] * r + p * v[j, c]` (FlashAttention, Algorithm 1, "
                "line 12: both rescaled by the same factor). At the end, out = acc / d."
            )
    return (
        "for each query: start at m = -inf, d = 0, acc = 0; for each key j, s = q . k_j / "
        "sqrt(d_head), m_new = max(m, s), r = exp(m - m_new), p = exp(s - m_new), d = d * r + p, "
        "acc = acc * r + p * v_j, m = m_new; at the end out = acc / d. Tiles in shared memory "
        "need cuda.syncthreads() after they are loaded and before they are overwritten."
    )


def _matches_a_missing_rescale(q, k, v, got, missing: str) -> bool:
    """Whether ``got`` is the output of a running softmax that never rescales ``missing`` ("acc",
    "d" or "both") when the maximum grows, key by key or tile by tile (tiles of 16 to 64)."""
    scores = q.astype(np.float64) @ k.astype(np.float64).T / math.sqrt(q.shape[1])
    n = scores.shape[1]
    for tile in (1, 16, 32, 64):
        tile_max = np.maximum.accumulate(
            np.repeat(
                [scores[:, j : j + tile].max(axis=1) for j in range(0, n, tile)], tile, axis=0
            )[:n].T,
            axis=1,
        )  # the running maximum in use when key j is added
        final = tile_max[:, -1:]
        terms_now = np.exp(scores - tile_max)  # as added, relative to the maximum then
        terms_final = np.exp(scores - final)
        d = (terms_now if missing in ("d", "both") else terms_final).sum(axis=1, keepdims=True)
        acc = (terms_now if missing in ("acc", "both") else terms_final) @ v.astype(np.float64)
        with np.errstate(all="ignore"):
            if np.allclose(got, acc / d, rtol=1e-3, atol=1e-5):
                return True
    return False


def _attention_error_hint(case: Case, error: str) -> str:
    target = index_error_target(case, error)
    if target == "shared":
        return (
            "an index into a shared tile ran past its end: a tile holds the keys `start` to "
            "`start + TILE - 1`, indexed 0 to TILE - 1 (`j - start`)."
        )
    if target in ("read", "write"):
        return (
            "the last key tile runs past n: load k[j] and v[j] only for `j < n` (not `j <= n`), "
            "and guard the query with `if i < n:` before reading q or writing out."
        )
    return ""


def _scratch_untouched() -> TraceRequirement:
    def check(report):
        for name, stats in report.arrays.items():
            if stats.space == "global" and name.split("#")[0] == "scratch":
                written = stats.stores.accesses
                if written:
                    what = (
                        f"your kernel wrote {written:,} scores to the global buffer `scratch` "
                        f"({stats.stores.bytes_moved:,} bytes in 32-byte sectors): that is the "
                        "unfused algorithm, which sends the n x n score matrix through global "
                        "memory."
                    )
                    why = (
                        "keep each query's scores in registers: for each key tile, compute the "
                        "scores, update the running (m, d, acc) and move on; never store a score."
                    )
                    return what, why
        return None

    return TraceRequirement("no score written to global memory", check)


_SHARED_TILES_HINT = (
    "every thread read K and V straight from global memory, so each key is fetched once per "
    "query. Load a tile of K and V into shared memory once per block (each thread one row), "
    "cuda.syncthreads(), then let all the block's queries read it there."
)


def _attention_trace_case(rng: np.random.Generator) -> Case:
    return _attention_case(rng, BLOCK_Q, 2.0)  # one block: the trace costs seconds per block


register(
    kernel_exercise(
        id="attention_tile",
        chapter=CHAPTER,
        title="One tile of fused attention: running (m, d, acc) per query over key tiles",
        signature=(
            f"attention_tile(q, k, v, scratch, out): q, k, v float32 (n, {HEAD_DIM}); out[i] = "
            f"softmax(q[i] . k[j] / sqrt({HEAD_DIM}) over j) @ v; scratch float32 (n, n) is the "
            "score buffer only the unfused algorithm needs: leave it untouched"
        ),
        launch_text=f"1-D: {BLOCK_Q} threads per block, one query each; ceil(n / {BLOCK_Q}) blocks",
        output_names=("out",),
        cases=_attention_cases,
        hint=_attention_hint,
        error_hint=_attention_error_hint,
        guard_hint=(
            "guard the query with `if i < n:` (but let every thread help load the tiles and "
            "reach each cuda.syncthreads())."
        ),
        requirements=(
            _scratch_untouched(),
            max_loads_per_element("k", 1.0, _SHARED_TILES_HINT),
            max_loads_per_element("v", 1.0, _SHARED_TILES_HINT),
        ),
        trace_case=_attention_trace_case,
    )
)
