"""Exercises of lab 12 (Triton, chapter 12): six of its eight ``@triton.jit`` kernels (the ramp's two are in ``ch12_triton_ramp``), each launched by the
checker itself on fresh random tensors (NaN-poisoned outputs, sizes that are not multiples of
the block among them), in Triton's interpreter on the simulator (``_triton`` explains the
machinery: out-of-bounds accesses are stopped and named, correct kernels are also compiled for a
GPU).

- ``triton_vector_add``: a masked vector add (Triton's tutorial 01).
- ``triton_softmax``: one program per row, the row in blocks of ``BLOCK_SIZE`` columns, a running
  maximum from -inf and a rescaled running sum (Milakov and Gimelshein 2018, arXiv 1805.02867,
  Algorithm 3; chapter 05's online softmax), then a second pass that writes.
- ``triton_layernorm``: layer norm forward (Ba et al. 2016, arXiv 1607.06450, section 3, with the
  biased variance as ``torch.nn.functional.layer_norm`` uses), one program per row.
- ``triton_matmul``: C = act(A @ B) in tiles with ``tl.dot``, float32 accumulation and the
  activation fused into the epilogue.
- ``triton_flash_attention``: FlashAttention-2's forward pass for one head (Dao 2023, arXiv
  2307.08691, Algorithm 1): online softmax over key blocks, causal mask, checked against
  ``torch.nn.functional.scaled_dot_product_attention``.
- ``triton_cross_entropy``: cross-entropy of the logits h @ W^T computed block by block over the
  vocabulary with a running log-sum-exp, so the n_rows x vocab logits never exist in memory
  (chapter 11's "full logits" problem; the idea of Wijmans et al. 2024, "Cut Your Losses in
  Large-Vocabulary Language Models", arXiv 2411.09009).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from . import _evidence as ev
from ._kernels import Mismatch
from ._registry import register
from ._triton import LaunchError, TritonCase, register_reducer, row_start, triton_exercise
from ._triton import cdiv as _cdiv
from ._triton import nan_tensor as _nan
from ._triton import observed_relation as _relation
from ._triton import tensor as _tensor
from ._triton import torch_module as _torch

CHAPTER = "12_triton"

register_reducer()  # a compiled kernel (GPU mode) travels to the checker by its function


def _close(got: np.ndarray, pattern: np.ndarray, rtol=1e-3, atol=1e-4) -> bool:
    with np.errstate(invalid="ignore"):
        return bool(np.allclose(got, pattern, rtol=rtol, atol=atol, equal_nan=True))


def _nonfinite(mismatch: Mismatch) -> bool:
    """A written output is inf or NaN where a finite value was expected."""
    bad = ~np.isfinite(mismatch.got) & np.isfinite(mismatch.expected) & ~mismatch.unwritten
    return bool(bad.any())


def _tail_only(case: TritonCase, mismatch: Mismatch, columns: int | None = None) -> bool:
    """Only the last, partial block is wrong (along the last axis when 2-D)."""
    bad = mismatch.wrong | mismatch.unwritten
    if bad.ndim == 1:
        n, block = bad.shape[0], case.extra.get("block", 0)
    else:
        n, block = bad.shape[-1], case.extra.get("block", 0)
        bad = bad.any(axis=tuple(range(bad.ndim - 1)))
    if not block or n % block == 0:
        return False
    start = (n // block) * block
    return bool(bad[start:].any() and not bad[:start].any())


# --- triton_vector_add --------------------------------------------------------------------------

ADD_SIGNATURE = "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr)"
ADD_LAUNCH = (
    "add_kernel[(triton.cdiv(n_elements, BLOCK_SIZE),)](x, y, out, n_elements, BLOCK_SIZE) "
    "with float32 tensors of n_elements = 1000, 4096, 1 and 333 and BLOCK_SIZE = 128, 1024, 64, "
    "64: one program per block of BLOCK_SIZE elements"
)


def _add_cases(rng: np.random.Generator) -> list[TritonCase]:
    cases = []
    for n, block in ((1000, 128), (4096, 1024), (1, 64), (333, 64)):
        x, y = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(2))
        cases.append(
            TritonCase(
                label=f"n_elements={n}, BLOCK_SIZE={block}",
                grid=(_cdiv(n, block),),
                args={"x_ptr": _tensor(x), "y_ptr": _tensor(y), "out_ptr": _nan(n), "n": n},
                outputs=("out_ptr",),
                expected={"out_ptr": _tensor(x + y)},
                constexprs={"BLOCK_SIZE": block},
                extra={"block": block, "x": x, "y": y},
            )
        )
    return cases


def _bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (round to nearest even), back as float32."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def _add_hint(case: TritonCase, mismatch: Mismatch) -> str:
    x, y, got = case.extra["x"], case.extra["y"], mismatch.got
    block = case.extra["block"]
    written = ~mismatch.unwritten
    if not mismatch.wrong.any() and written[:block].all() and not written[block:].any():
        # two causes leave this output: every program wrote block 0, or only program 0's
        # mask let lanes through (a blind answer compared the offsets with BLOCK_SIZE)
        return (
            f"only the first block (elements 0 to {block - 1}) was written, and it is right. "
            "Either every program wrote block 0: the offsets must include the program's block "
            "index, `pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)`, with `pid = "
            "tl.program_id(0)` (the grid is one-dimensional, so axis 1 is always 0); or the "
            "other programs' masks were all False: the mask compares those offsets with the "
            "tensor's size, `offsets < n_elements`."
        )
    if mismatch.unwritten.any() and not mismatch.wrong.any():
        first = int(np.argwhere(mismatch.unwritten)[0][0])
        n, missed = mismatch.unwritten.size, int(mismatch.unwritten.sum())
        if missed < block and first % block and missed == n - first:  # a tail inside a block
            which = (
                f"the last {missed} elements ({first} to {n - 1})"
                if missed > 1
                else f"the last element ({first})"
            )
            return (
                f"only {which}, inside the last block, never got stored, and every element "
                "before is right: the mask stops short of the end. It must let every offset "
                "below n_elements through, `mask = offsets < n_elements`."
            )
        return (
            f"element {first} (in block {first // block}) was never stored: each program must "
            "cover its own block, `offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)`, with "
            "`pid = tl.program_id(0)`."
        )
    for twice, name in ((x, "x"), (y, "y")):  # one tensor loaded for both operands
        if _close(got, 2 * twice):
            other = "y" if name == "x" else "x"
            return (
                f"your output is {name} + {name}: both loads read `{name}_ptr`; load {other} "
                f"from `{other}_ptr`."
            )
    for pattern, what in ((x * y, "multiplied"), (x - y, "subtracted"), (x, "x only")):
        if _close(got, pattern):
            return (
                f"your output is x and y {what}: it should be `x + y`."
                if what != ("x only")
                else "your output equals x: add y too (`tl.load(y_ptr + offsets, ...)`)."
            )
    stored = got[written & np.isfinite(got)]
    if (
        stored.size
        and np.all(stored == np.round(stored))
        and not np.all((x + y) == np.round(x + y))
    ):
        return (
            "every value you stored is a whole number (0, 1, ...) where the sums have "
            "fractions: the sum went through an integer type, a cast such as "
            "`.to(tl.int32)` or an integer `other=`; keep it float32, as x and y are."
        )
    rounded = {
        "float16": (x.astype(np.float16) + y.astype(np.float16)).astype(np.float32),
        "bfloat16": _bfloat16(x) + _bfloat16(y),
    }
    precision = ev.nearest_candidate(got, x + y, rounded)
    if precision:
        return (
            f"your sums are what {precision} inputs give: add x and y in their own dtype, "
            f"float32, without casting them to {precision}."
        )
    sums = x + y
    lanes = np.flatnonzero(written[:block])
    if lanes.size and not written[block:].any():
        others = [sums[j * block : (j + 1) * block] for j in range(1, -(-sums.size // block))]
        sources = []  # for each written lane, the last later block whose sum it holds
        for i in lanes:
            found = [
                j
                for j, other in enumerate(others, 1)
                if i < other.size and np.isclose(got[i], other[i], rtol=1e-5, atol=1e-6)
            ]
            if not found:
                break
            sources.append(found[-1])
        else:
            j = sources[0]
            return (
                f"only elements 0 to {block - 1} were written, and they hold the sums of later "
                f"blocks, lane by lane (element {lanes[0]} holds the sum of element "
                f"{j * block + int(lanes[0])}, program {j}'s): every program loaded its own "
                "block but stored into the first one. Store with the same offsets you load "
                "with, `tl.store(out_ptr + offsets, ...)`, `offsets = pid * BLOCK_SIZE + "
                "tl.arange(0, BLOCK_SIZE)`."
            )
    if _close(got[:block], (x + y)[:block]) and not _close(got, x + y):
        return (
            "the first block is right and later ones are not: the offsets must include the "
            "program's position, `pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)`."
        )
    return "compare your offsets and the values you store with the chapter's vector add."


def _add_error(case: TritonCase, error: LaunchError) -> str:
    return ""


register(
    triton_exercise(
        id="triton_vector_add",
        chapter=CHAPTER,
        title="Masked vector add in Triton",
        signature=ADD_SIGNATURE,
        launch_text=ADD_LAUNCH,
        cases=_add_cases,
        hint=_add_hint,
        error_hint=_add_error,
    )
)

# --- triton_softmax -----------------------------------------------------------------------------

SOFTMAX_SIGNATURE = (
    "softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr)"
)
SOFTMAX_LAUNCH = (
    "softmax_kernel[(n_rows,)](x, out, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE): one "
    "program per row, float32; BLOCK_SIZE (32 or 64) may be smaller than n_cols, so a row is "
    "read in blocks: rows of 100, 64, 37 and 70 columns, one case with values up to 100, one "
    "with rows of very negative values (-200 to -180), one where x is a strided view (row "
    "stride 64, 50 columns)"
)


def _softmax_np(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def _softmax_case(rng, rows, cols, block, low=-5.0, high=5.0, kind="", row_stride=None):
    stride = row_stride or cols
    base = rng.uniform(low, high, size=(rows, stride)).astype(np.float32)
    x = _tensor(base)[:, :cols]
    values = base[:, :cols]
    label = f"x {rows}x{cols}, BLOCK_SIZE={block}"
    if kind == "large":
        label += ", values up to 100"
    elif kind == "negative":
        label += ", values from -200 to -180"
    if row_stride:
        label += f", x a view with row stride {row_stride}"
    return TritonCase(
        label=label,
        grid=(rows,),
        args={
            "x_ptr": x,
            "out_ptr": _nan(rows, cols),
            "x_row_stride": stride,
            "out_row_stride": cols,
            "n_cols": cols,
        },
        outputs=("out_ptr",),
        expected={"out_ptr": _tensor(_softmax_np(values))},
        constexprs={"BLOCK_SIZE": block},
        rtol=1e-4,
        atol=1e-6,
        extra={"block": block, "x": values, "kind": kind, "strided": bool(row_stride)},
    )


def _softmax_cases(rng: np.random.Generator) -> list[TritonCase]:
    return [
        _softmax_case(rng, 9, 100, 32),
        _softmax_case(rng, 5, 64, 64),
        _softmax_case(rng, 6, 37, 64),
        _softmax_case(rng, 4, 70, 32, 50.0, 100.0, "large"),
        _softmax_case(rng, 4, 70, 32, -200.0, -180.0, "negative"),
        _softmax_case(rng, 5, 50, 32, row_stride=64),
    ]


def _online_patterns(x: np.ndarray, block: int) -> dict[str, np.ndarray]:
    """What common mistakes of a blocked online softmax produce, row by row."""
    x64 = x.astype(np.float64)
    rows, cols = x.shape
    m = x64.max(axis=1, keepdims=True)
    unscaled = np.zeros((rows, 1))
    padded = np.zeros((rows, 1))
    running = np.full((rows, 1), -np.inf)
    for start in range(0, cols, block):
        chunk = x64[:, start : start + block]
        running = np.maximum(running, chunk.max(axis=1, keepdims=True))
        unscaled += np.exp(chunk - running).sum(axis=1, keepdims=True)
        missing = block - chunk.shape[1]
        lanes = np.exp(chunk - m).sum(axis=1, keepdims=True)
        padded += lanes + missing * np.exp(np.minimum(0.0 - m, 700))
    lane_sums = np.zeros((rows, block))
    for start in range(0, cols, block):
        chunk = np.exp(x64[:, start : start + block] - m)
        lane_sums[:, : chunk.shape[1]] += chunk
    first = x64[:, :block]
    m1 = first.max(axis=1, keepdims=True)
    last = x64[:, (cols - 1) // block * block :]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        patterns = {
            "first_block": np.exp(x64 - m1) / np.exp(first - m1).sum(axis=1, keepdims=True),
            "per_block": np.hstack(
                [
                    _softmax_np(x64[:, start : start + block]).astype(np.float64)
                    for start in range(0, cols, block)
                ]
            ),
            "last_block": np.exp(x64 - m) / np.exp(last - m).sum(axis=1, keepdims=True),
            "unscaled": np.exp(x64 - m) / unscaled,
            "padded": np.exp(x64 - m) / padded,
            "unnormalised": np.exp(x64 - m),
            # a sum kept per lane and never reduced: each element over its own lane's sum (the
            # row's elements at the same position of every block)
            "per_lane": np.exp(x64 - m) / lane_sums[:, np.arange(cols) % block],
        }
    return {k: v.astype(np.float32) for k, v in patterns.items()}


def _softmax_blocks(case: TritonCase, mismatch: Mismatch) -> str:
    """The hint when every block of BLOCK_SIZE columns is right up to a factor of its own
    (per row and block) and each block's factor is the row's whole normaliser over that of a
    range of blocks: the block was normalised with the maximum and sum of those blocks only
    (the ones up to it: the output written inside the loop that gathers them). "" when the
    blocks are not each a constant multiple, or no range explains every block."""
    x, block = case.extra["x"].astype(np.float64), case.extra["block"]
    factors = ev.block_factors(mismatch.got, mismatch.expected, block, rtol=1e-3, atol=1e-7)
    if factors is None or not np.isfinite(factors).all():
        return ""
    top = x.max(axis=1, keepdims=True)
    sums = np.add.reduceat(np.exp(x - top), np.arange(0, x.shape[1], block), axis=1)
    whole = sums.sum(axis=1)
    nblocks = sums.shape[1]
    ranges = []  # for each block, the range of blocks whose statistics normalised it
    for j in range(nblocks):
        seen = [
            (lo, hi)
            for lo in range(nblocks)
            for hi in range(lo, nblocks)
            if np.allclose(factors[:, j], whole / sums[:, lo : hi + 1].sum(axis=1), rtol=2e-3)
        ]
        if not seen:
            return ""
        ranges.append(seen[0] if (0, j) not in seen else (0, j))
    if all(r == (0, j) for j, r in enumerate(ranges)) and nblocks > 1:
        return (
            f"in every row, block j of BLOCK_SIZE = {block} columns is normalised with the "
            "maximum and sum of blocks 0 to j only (the last block, normalised with the whole "
            "row's, is right): your output is written inside the loop that gathers the "
            "statistics, before they cover the row. Finish that loop first, then write "
            "exp(x - m) / s in a second loop over the blocks."
        )
    said = ", ".join(
        f"block {j} with blocks {ev.describe_indices(range(lo, hi + 1))}"
        for j, (lo, hi) in enumerate(ranges[:4])
    )
    return (
        f"each block of BLOCK_SIZE = {block} columns is right up to a factor, as if normalised "
        f"with the maximum and sum of some blocks only ({said}{', ...' if nblocks > 4 else ''}): "
        "m and s must cover every block of the row before any output is written."
    )


def _softmax_row_scale(case: TritonCase, mismatch: Mismatch) -> str:
    """The hint when each row is the right one times exp(m)^p, m the row's maximum (p = 1:
    the output pass leaves out the maximum the sum subtracted); "" otherwise."""
    x = case.extra["x"].astype(np.float64)
    relation = ev.find_relation(mismatch.got, mismatch.expected, rtol=1e-4, atol=1e-7)
    if relation is None or relation.kind != "row_factor":
        return ""
    top = x.max(axis=1)
    if np.ptp(top) < 0.05:
        return ""
    p = (
        float(np.polyfit(top, np.log(np.abs(relation.values)), 1)[0])
        if all(v > 0 for v in relation.values)
        else None
    )
    if p is None or not np.allclose(np.log(relation.values), p * top, atol=2e-3 * max(1, abs(p))):
        return ""
    if abs(p - 1) < 0.01:
        return (
            "each row is the right one times exp(m), m the row's maximum: your output pass "
            "computes exp(x) / s while s sums exp(x - m); subtract the same maximum when "
            "writing, `tl.exp(x - m) / s`."
        )
    if abs(p + 1) < 0.01:
        return (
            "each row is the right one times exp(-m), m the row's maximum: the maximum is "
            "subtracted twice when writing; `tl.exp(x - m) / s`."
        )
    return ""


def _softmax_infinite(case: TritonCase, probe) -> str:
    """The hint when every output is +inf: exp(x - m) / s with m still -inf or s still 0. A
    probe with rows whose values lie far below their maximum tells which: s = 0 gives 0 / 0 =
    NaN there, m = -inf gives inf everywhere."""
    rng = np.random.default_rng(12)
    x = np.full((2, 64), -150.0, np.float32) + rng.uniform(-1, 1, (2, 64)).astype(np.float32)
    x[0, 5], x[1, 40] = 0.5, -0.5
    chosen = TritonCase(
        label="probe",
        grid=(2,),
        args={
            "x_ptr": _tensor(x),
            "out_ptr": _nan(2, 64),
            "x_row_stride": 64,
            "out_row_stride": 64,
            "n_cols": 64,
        },
        outputs=("out_ptr",),
        expected={"out_ptr": _tensor(_softmax_np(x))},
        constexprs={"BLOCK_SIZE": 32},
        rtol=1e-4,
        atol=1e-6,
    )
    seen = probe(chosen)
    if seen.mismatch is None:
        return ""
    got = seen.mismatch.got
    if np.isposinf(got).all():
        return (
            "every value you store is +inf, even in rows whose values lie far below their "
            "maximum: the m the output pass subtracts is still -inf, so exp(x - m) is inf. "
            "The running maximum is never updated: set `m = m_new` at the end of each block "
            "of the first loop."
        )
    if np.isnan(got).any() and np.isposinf(got).any():
        return (
            "every value you store is inf or NaN: you divide by a sum s that is still 0 "
            "(exp(x - m) / 0 is inf, and 0 / 0 NaN where exp(x - m) underflows). Accumulate "
            "it in the first loop, `s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), "
            "axis=0)`."
        )
    return ""


def _softmax_other_row(case: TritonCase, mismatch: Mismatch) -> str:
    """The hint when the first wrong row's output is proportional to exp of another row's
    values: a pass that reads x reads that row (the right shape, another row's numbers)."""
    x = case.extra["x"].astype(np.float64)
    got = mismatch.got.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    wrong = [r for r in range(x.shape[0]) if mismatch.wrong[r].any()]
    if not wrong or x.shape[0] < 2:
        return ""
    r = wrong[0]
    for k in range(x.shape[0]):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = got[r] / e[k]
        if (
            k != r
            and np.isfinite(ratio).all()
            and abs(ratio.mean()) > 0
            and np.ptp(ratio) <= 1e-3 * abs(ratio.mean())
        ):
            return (
                f"row {r}'s output is proportional to exp of row {k}'s values, not of its own: "
                f"a pass that loads x reads row {k}. Both passes load the program's own row, "
                "`x_ptr + row * x_row_stride + cols`."
            )
    return ""


def _softmax_hint(case: TritonCase, mismatch: Mismatch, probe) -> str:
    kind, got = case.extra["kind"], mismatch.got
    if _nonfinite(mismatch) and kind == "negative":
        return (
            "rows of very negative values came out inf or NaN: start the running maximum at "
            "`-float('inf')`, not 0 (from 0, exp(x - m) underflows to 0 for every x and the sum "
            "is 0), and load the masked lanes with `other=-float('inf')`."
        )
    if _nonfinite(mismatch) and kind == "large":
        return (
            "rows with values up to 100 came out inf or NaN: exp(100) overflows float32; "
            "subtract the row's running maximum before `tl.exp` (exp(x - m))."
        )
    placed = row_start(case, mismatch, _softmax_np(case.extra["x"]))
    if placed:
        return placed
    other = _softmax_other_row(case, mismatch)
    if other:
        return other
    if case.extra["strided"]:
        return (
            "only the case where x is a strided view is wrong: a row starts at "
            "`x_ptr + row * x_row_stride`, not `row * n_cols` (rows can be further apart than "
            "their length)."
        )
    right = _softmax_np(case.extra["x"])
    with np.errstate(divide="ignore"):
        log_right = np.log(right)
    if np.isfinite(got).all() and _close(got, log_right, rtol=1e-4, atol=1e-4):
        return (
            "each value you stored is the log of the right one: x - m - log(s), the "
            "log-softmax. Store the softmax itself, `tl.exp(x - m) / s`."
        )
    patterns = _online_patterns(case.extra["x"], case.extra["block"])
    if _close(got, patterns["unscaled"], rtol=1e-4, atol=1e-6):
        return (
            "your running sum is not rescaled when the maximum grows: before adding a new "
            "block, multiply it by exp(m_old - m_new) (`s = s * tl.exp(m - m_new) + ...`)."
        )
    if _close(got, patterns["padded"], rtol=1e-4, atol=1e-6):
        return (
            "the lanes past the end of the row count in your sum: load them with "
            "`other=-float('inf')` so that exp(x - m) is 0 there."
        )
    if _close(got, patterns["unnormalised"], rtol=1e-4, atol=1e-6):
        return "divide exp(x - m) by the row's sum before storing it."
    if _close(got, patterns["per_lane"], rtol=1e-4, atol=1e-6):
        return (
            f"each element is divided by the sum over its own lane only (the row's elements at "
            f"the same position of every block of {case.extra['block']}), not by the row's "
            "total: your running sum is a block of BLOCK_SIZE partial sums that is never "
            "added up. Reduce it, `s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), "
            "axis=0)`, so that s is one number per row."
        )
    if _close(got, patterns["first_block"], rtol=1e-4, atol=1e-6):
        return (
            "your output is normalised with the maximum and sum of the first BLOCK_SIZE "
            "columns only: the first pass must loop over every block of the row, "
            "`for start in range(0, n_cols, BLOCK_SIZE)`."
        )
    if _close(got, patterns["per_block"], rtol=1e-4, atol=1e-6):
        return (
            "each block of BLOCK_SIZE columns is normalised on its own (it sums to 1): the "
            "maximum and sum must cover the whole row; compute them over all blocks first, "
            "then write exp(x - m) / s."
        )
    written = ~mismatch.unwritten
    if written.all() and np.all(got == 0) and (mismatch.expected > 0).all():
        return (
            "every value you store is 0, in every row: exp(x - m) / s is 0 when the sum s is "
            "inf. s becomes inf when a block's terms are taken against the running maximum "
            "before it is updated: in the first block m is still -inf and exp(x - m) is "
            "exp(+inf). Take them against the new maximum, "
            "`m_new = tl.maximum(m, tl.max(x, axis=0))`, then `tl.exp(x - m_new)`."
        )
    if written.all() and np.isposinf(got).all():
        infinite = _softmax_infinite(case, probe)
        if infinite:
            return infinite
    for explained in (_softmax_blocks, _softmax_row_scale):
        found = explained(case, mismatch)
        if found:
            return found
    if _nonfinite(mismatch):
        rows = ev.describe_indices(np.flatnonzero((~np.isfinite(got)).any(axis=1)))
        return (
            f"rows {rows} came out inf or NaN on ordinary values: look for 0 * inf or "
            "inf - inf. The running maximum starts at -inf, so the rescale factor "
            "exp(m_old - m_new) is 0 in the first block (the other way round it is inf), "
            "and masked lanes load as -inf so that exp(x - m) is 0 there."
        )
    if _close(got, patterns["last_block"], rtol=1e-4, atol=1e-6):
        return (
            "your sum holds only the last block of the row: it is replaced in each block; "
            "accumulate it, `s = s * tl.exp(m - m_new) + tl.sum(...)`."
        )
    region = ev.find_region(got, mismatch.expected, wrong=mismatch.wrong | mismatch.unwritten)
    if region.only_last_block or (
        mismatch.unwritten.any() and not mismatch.wrong.any() and region.all_rows
    ):
        columns = ev.describe_indices(region.columns)
        what = "never written" if not mismatch.wrong.any() else "wrong"
        return (
            f"in every row, columns {columns} are {what} and the others are right: the loop "
            "that writes must cover every block, `range(0, n_cols, BLOCK_SIZE)`, including "
            "the last, partial one (masked with `cols < n_cols`)."
        )
    relation = ev.find_relation(
        got, mismatch.expected, rtol=case.rtol, atol=case.atol, poisoned=mismatch.unwritten
    )
    if relation is not None and relation.kind == "row_factor" and not relation.subset:
        return (
            "each row of yours is the right row times a factor of its own, so within a row "
            "the values are right relative to each other and only what the row is divided by "
            "is off: the sum s (every block added to it exactly once, rescaled by "
            "exp(m_old - m_new) when the maximum grows) or the m of the second pass (the "
            "row's final maximum, the one s was summed against). Then out = exp(x - m) / s."
        )
    return (
        "check the two passes against chapter 05's online softmax: m starts at -inf, "
        "s = s * exp(m_old - m_new) + sum(exp(x - m_new)) over the blocks, then "
        "out = exp(x - m) / s for each block."
    ) + _relation(case, mismatch)


register(
    triton_exercise(
        id="triton_softmax",
        chapter=CHAPTER,
        title="Fused row softmax, online over blocks of a row",
        signature=SOFTMAX_SIGNATURE,
        launch_text=SOFTMAX_LAUNCH,
        cases=_softmax_cases,
        hint=_softmax_hint,
    )
)

# --- triton_layernorm ---------------------------------------------------------------------------

LAYERNORM_SIGNATURE = (
    "layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, "
    "BLOCK_SIZE: tl.constexpr)"
)
LAYERNORM_LAUNCH = (
    "layernorm_kernel[(n_rows,)](x, w, b, out, x.stride(0), out.stride(0), n_cols, 1e-5, "
    "BLOCK_SIZE) with BLOCK_SIZE = triton.next_power_of_2(n_cols): one program per row, the "
    "whole row in one block; float32 rows of 100, 64 and 50 columns (x a view with row stride "
    "64), one row that is constant, and one case of values near 100"
)
EPS = 1e-5


def _layernorm_np(x, w, b, eps=EPS, ddof=0):
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = x64.var(axis=1, keepdims=True, ddof=ddof)
    return ((x64 - mean) / np.sqrt(var + eps) * w + b).astype(np.float32)


def _layernorm_one_pass(x, w, b, eps=EPS):
    """Layer norm with the variance as E[x^2] - E[x]^2, all in float32."""
    x32 = x.astype(np.float32)
    n = np.float32(x.shape[1])
    mean = x32.sum(axis=1, keepdims=True, dtype=np.float32) / n
    var = (x32 * x32).sum(axis=1, keepdims=True, dtype=np.float32) / n - mean * mean
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (x32 - mean) / np.sqrt(var + np.float32(eps)) * w + b
    return out.astype(np.float32)


def _layernorm_case(rng, rows, cols, kind="", row_stride=None, eps=EPS):
    stride = row_stride or cols
    block = 1 << (cols - 1).bit_length()
    base = rng.uniform(-2, 2, size=(rows, stride)).astype(np.float32)
    label = f"x {rows}x{cols}, BLOCK_SIZE={block}"
    if kind == "constant":
        base[1] = 0.75
        base[2] = 0.75 + rng.uniform(-1e-3, 1e-3, size=stride)  # variance 3e-7, below eps
        label += ", row 1 constant"  # the label is quoted by the lab's executed outputs
    elif kind == "offset":
        base = (100.0 + rng.uniform(-0.5, 0.5, size=(rows, stride))).astype(np.float32)
        label += ", values near 100 (spread 1)"
    if row_stride:
        label += f", x a view with row stride {row_stride}"
    if eps != EPS:
        label += f", eps={eps:g}"
    w = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, cols).astype(np.float32)
    values = base[:, :cols]
    return TritonCase(
        label=label,
        grid=(rows,),
        args={
            "x_ptr": _tensor(base)[:, :cols],
            "w_ptr": _tensor(w),
            "b_ptr": _tensor(b),
            "out_ptr": _nan(rows, cols),
            "x_row_stride": stride,
            "out_row_stride": cols,
            "n_cols": cols,
            "eps": eps,
        },
        outputs=("out_ptr",),
        expected={"out_ptr": _tensor(_layernorm_np(values, w, b, eps=eps))},
        constexprs={"BLOCK_SIZE": block},
        rtol=1e-3,
        atol=1e-3,
        extra={
            "x": values,
            "w": w,
            "b": b,
            "kind": kind,
            "strided": bool(row_stride),
            "eps": eps,
        },
    )


def _layernorm_cases(rng: np.random.Generator) -> list[TritonCase]:
    return [
        _layernorm_case(rng, 7, 100),
        _layernorm_case(rng, 4, 64, "constant"),
        _layernorm_case(rng, 5, 50, row_stride=64),
        _layernorm_case(rng, 3, 96, "offset"),
        _layernorm_case(rng, 7, 100, "eps", eps=0.1),  # the eps argument, not a constant
    ]


def _layernorm_scale(x, w, b, got) -> str:
    """The hint when (y - b) / w is x - mean times a factor per row (the mean, w and b right,
    the row's scale wrong), naming the power of the variance that factor is; "" otherwise."""
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(axis=1, keepdims=True)
    var = x64.var(axis=1) + EPS
    with np.errstate(divide="ignore", invalid="ignore"):
        normal = (got.astype(np.float64) - b) / w
    rows = np.flatnonzero(var > 1e-2)  # rows with a spread to measure a factor on
    if rows.size < 2 or not np.isfinite(normal[rows]).all():
        return ""
    factors = []
    for i in rows:
        c = centred[i]
        f = float(np.dot(normal[i], c) / np.dot(c, c))
        if not (f > 0 and _close(normal[i], f * c, rtol=1e-3, atol=1e-3 * max(1.0, f))):
            return ""
        factors.append(f)
    if np.allclose(np.log(factors), -0.5 * np.log(var[rows]), atol=1e-3):
        return ""  # the scale is right: something else is wrong
    said = (
        "each row's (y - b) / w is x - mean times a scale of its own, and that scale is wrong "
        "(the mean, w and b are right)"
    )
    e = ev.power_of(factors, var[rows])
    if e is not None:
        half = round(2 * e) / 2
        power = f"{half:g}" if abs(e - half) < 0.02 else f"{e:.3g}"
        named = {
            "-1": "you divide by the variance, var + eps, not by its square root: "
            "`rstd = 1 / tl.sqrt(var + eps)`",
            "0": "x - mean is not divided by the standard deviation at all: multiply it "
            "by `rstd = 1 / tl.sqrt(var + eps)`",
            "0.5": "you multiply by the standard deviation instead of dividing by it: "
            "`rstd = 1 / tl.sqrt(var + eps)`",
            "1": "you multiply by the variance: divide by its square root, "
            "`rstd = 1 / tl.sqrt(var + eps)`",
        }.get(power, "the scale must be (var + eps)^(-1/2), `1 / tl.sqrt(var + eps)`")
        return (
            f"{said}: the scale of each row is (var + eps)^({power}) where it should be "
            f"(var + eps)^(-1/2); {named}."
        )
    return (
        f"{said}; the scales are not a power of the row's variance: check "
        "var = sum((x - mean)^2) / n_cols over the real columns and `1 / tl.sqrt(var + eps)`."
    )


def _layernorm_affine(x, w, b, got) -> str:
    """The hint when the output is the right normalised x (xhat) put through the wrong affine
    map: per column y = xhat * p + q with (p, q) = (b, w) (weight and bias swapped), or per
    row (y - b) / w = xhat + c_i with c_i = mean_i * rstd_i (x scaled without being centred);
    "" otherwise."""
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(x64.var(axis=1, keepdims=True) + EPS)
    xhat = (x64 - mean) * rstd
    fit = ev.affine_fit(got, xhat, axis=0, rtol=1e-3, atol=1e-3)
    if fit is not None:
        p, q = fit
        if _close(p, b, atol=1e-3) and _close(q, w, atol=1e-3) and not _close(w, b, atol=1e-3):
            return (
                "each column of your output is the normalised x times b plus w: the weight and "
                "the bias are swapped; `y = (x - mean) * rstd * w + b`, w scaling and b "
                "shifting."
            )
        known = {"w": w, "b": b, "1": np.ones_like(w), "0": np.zeros_like(w)}
        names = [
            next((n for n, v in known.items() if _close(part, v, atol=1e-3)), None)
            for part in (p, q)
        ]
        if None not in names and names != ["w", "b"] and not _close(w, b, atol=1e-3):
            scale, shift = names
            return (
                f"each column of your output is the normalised x times {scale} plus {shift}, "
                "where it should be times w plus b: check which tensor each load reads "
                "(`w_ptr + cols`, `b_ptr + cols`) and `y = (x - mean) * rstd * w + b`."
            )
    # the bias divided by the row's standard deviation too: y = (x_hat * w) + b * rstd_i
    residual = got.astype(np.float64) - xhat * w
    per_row = residual[:, :1]
    if (
        residual.shape[1] > 1
        and np.isfinite(residual).all()
        and _close(residual, np.broadcast_to(per_row, residual.shape), atol=1e-3)
        and not _close(residual, np.broadcast_to(b, residual.shape), atol=1e-3)
    ):
        rows = residual.shape[0]
        which = (
            " (row r gets b[r])"
            if rows <= len(b) and _close(per_row[:, 0], b[:rows].astype(np.float64), atol=1e-3)
            else ""
        )
        return (
            "your output is the normalised x times w, plus one number per row" + which + ": "
            "the bias has one value per column, like w. Load it at the row's columns, "
            "`tl.load(b_ptr + cols, mask=mask)`, and add it element by element."
        )
    if np.isfinite(residual).all() and np.abs(b).max() > 1e-3:
        c = (residual * b).sum(axis=1) / (b * b).sum()
        if (
            _close(residual, c[:, None] * b, atol=1e-3)
            and _close(c, rstd[:, 0], rtol=1e-3, atol=1e-3)
            and not _close(c, np.ones_like(c), atol=1e-3)
        ):
            return (
                "your output is the normalised x times w, plus b times the row's 1/sqrt(var + "
                "eps): the bias went through the division too (added before dividing by the "
                "standard deviation). Add it after normalising, `y = (x - mean) * rstd * w + b`."
            )
    with np.errstate(divide="ignore", invalid="ignore"):
        normal = (got.astype(np.float64) - b) / w
    fit = ev.affine_fit(normal, xhat, axis=1, rtol=1e-3, atol=1e-3)
    if fit is None:
        return ""
    p, q = fit
    shift = (mean * rstd)[:, 0]
    if _close(p, np.ones_like(p), atol=1e-3) and _close(q, shift, atol=2e-3):
        if np.abs(shift).max() < 1e-2:  # rows of mean ~0 cannot tell
            return ""
        return (
            "in each row, (y - b) / w is the right normalised value plus a constant of its "
            "own, and that constant is the row's mean times rstd: you scale x itself, not "
            "x - mean (rows of mean 0 would come out right). Centre it first: "
            "`y = (x - mean) * rstd * w + b`."
        )
    return ""


def _layernorm_divisor(case: TritonCase, got: np.ndarray) -> str:
    """The hint when the row's sums are divided by another size than n_cols: BLOCK_SIZE (the
    padded width) or a row stride, each named when it has that value; "" otherwise."""
    x, w, b = case.extra["x"], case.extra["w"], case.extra["b"]
    x64, n = x.astype(np.float64), x.shape[1]
    names: dict[int, list[str]] = {}
    for name, value in (
        ("BLOCK_SIZE", case.constexprs.get("BLOCK_SIZE")),
        ("x_row_stride", case.args.get("x_row_stride")),
        ("out_row_stride", case.args.get("out_row_stride")),
    ):
        if isinstance(value, int) and value != n:
            names.setdefault(value, []).append(name)
    for size, named in names.items():
        mean = x64.sum(axis=1, keepdims=True) / size
        diff = x64 - mean
        for var in (
            (diff**2).sum(axis=1, keepdims=True) / n,
            (diff**2).sum(axis=1, keepdims=True) / size,
            ((diff**2).sum(axis=1, keepdims=True) + (size - n) * mean**2) / n,
            ((diff**2).sum(axis=1, keepdims=True) + (size - n) * mean**2) / size,
        ):
            y = (diff / np.sqrt(var + EPS) * w + b).astype(np.float32)
            if _close(got, y, rtol=1e-4, atol=1e-4):
                said = (
                    f"{named[0]} = {size}"
                    if len(named) == 1
                    else f"{size}, the value here of both {' and '.join(named)}"
                )
                return (
                    f"your mean is divided by {said}, not by n_cols = {n}: divide the row's "
                    "sums by `n_cols`, the number of real columns; the block's padding lanes "
                    "and the row stride are not part of the row."
                )
    return ""


def _layernorm_hint(case: TritonCase, mismatch: Mismatch) -> str:
    x, w, b, got = case.extra["x"], case.extra["w"], case.extra["b"], mismatch.got
    kind = case.extra["kind"]
    unwritten_rows = mismatch.unwritten.reshape(mismatch.unwritten.shape[0], -1).all(axis=1)
    if (
        x.shape[0] > 1
        and not unwritten_rows[0]
        and unwritten_rows[1:].all()
        and not mismatch.wrong[0].any()
    ):
        return (
            f"only row 0 was written (and it is right); rows 1 to {x.shape[0] - 1} never were: "
            "every program handled row 0. The grid is one program per row along axis 0, so "
            "the row is `tl.program_id(0)` (axis 1 is always 0 on a one-dimensional grid)."
        )
    placed = row_start(case, mismatch, _layernorm_np(x, w, b, eps=case.extra.get("eps", EPS)))
    if placed:
        return placed
    if kind == "eps":  # the last case: every case before it, with eps = EPS, was right
        eps = case.extra["eps"]
        if _close(got, _layernorm_np(x, w, b, eps=EPS), rtol=1e-4, atol=1e-4):
            return (
                f"your output is layer norm with eps = {EPS:g}, but this case passes eps = "
                f"{eps:g}: use the kernel's `eps` argument, `1 / tl.sqrt(var + eps)`, not a "
                "constant."
            )
        return (
            f"only the case with eps = {eps:g} is wrong (the cases before it pass eps = {EPS:g} "
            "and were right): the kernel must use its `eps` argument, inside the square root, "
            "`1 / tl.sqrt(var + eps)`."
        )
    if kind == "constant" and _nonfinite(mismatch):
        return (
            "a constant row came out inf or NaN: its variance is 0, so add eps inside the "
            "square root, `1 / tl.sqrt(var + eps)`."
        )
    if _close(got, _layernorm_np(x, w, b, ddof=1), rtol=1e-4, atol=1e-4):
        return (
            "you divided the sum of squares by n_cols - 1: layer norm uses the biased "
            "variance, divided by n_cols (as `torch.nn.functional.layer_norm` does)."
        )
    eps = case.extra.get("eps", EPS)
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(axis=1, keepdims=True)
    var = x64.var(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        for rstd, written in ((1 / np.sqrt(np.maximum(var, eps)), "1 / sqrt(max(var, eps))"),):
            y = (centred * rstd * w + b).astype(np.float32)
            if _close(got, y, rtol=1e-4, atol=1e-4):
                return (
                    f"your output is what {written} gives: the same as 1 / sqrt(var + eps) "
                    "where the variance is far above eps, but not on the rows whose variance "
                    "is small (this case holds some). eps is added to the variance, inside "
                    "the square root: `rstd = 1 / tl.sqrt(var + eps)`."
                )
    block = 1 << (x.shape[1] - 1).bit_length()
    mean = x.astype(np.float64).mean(axis=1, keepdims=True)
    padded_var = ((x - mean) ** 2).sum(axis=1, keepdims=True) + (block - x.shape[1]) * mean**2
    padded = ((x - mean) / np.sqrt(padded_var / x.shape[1] + EPS) * w + b).astype(np.float32)
    if block != x.shape[1] and _close(got, padded, rtol=1e-4, atol=1e-4):
        return (
            "the lanes past the end of the row count in your variance: there x is 0, so "
            "x - mean is -mean; zero them first, `diff = tl.where(mask, x - mean, 0.0)`."
        )
    plain = _layernorm_np(x, np.ones_like(w), np.zeros_like(b))
    if _close(got, plain, rtol=1e-4, atol=1e-4):
        return "multiply by the weight and add the bias: `y = (x - mean) * rstd * w + b`."
    if _close(got, ((plain + b) * w).astype(np.float32), rtol=1e-4, atol=1e-4):
        return (
            "your output is (x_hat + b) * w: the bias was added before the weight multiplied, "
            "so w scales it too. The affine step is `x_hat * w + b`."
        )
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(axis=1, keepdims=True)
    own = (centred / np.sqrt(centred * centred + EPS) * w + b).astype(np.float32)
    if _close(got, own, rtol=1e-3, atol=1e-3):
        return (
            "each element was divided by the square root of its own (x - mean)^2 + eps: the "
            "variance must be one number per row, reduced over the row's real columns, "
            "`var = tl.sum(diff * diff, axis=0) / n_cols`."
        )
    std = np.sqrt(x64.var(axis=1, keepdims=True) + EPS)
    for outside in (np.sqrt(x64.var(axis=1, keepdims=True)) + EPS, x64.std(axis=1, keepdims=True)):
        with np.errstate(divide="ignore", invalid="ignore"):
            y = (centred / outside * w + b).astype(np.float32)
        if (  # 1e-3: a kernel's float32 x - mean on a row of spread 0.002 is off by ~1e-4
            # relative from this float64 value; the right output differs by 50-90% there
            _close(got[np.isfinite(y)], y[np.isfinite(y)], rtol=1e-3, atol=1e-3)
            and (~np.isfinite(y)).sum() == (~np.isfinite(got)).sum()
        ):
            return (
                "eps must be added to the variance inside the square root, "
                "`1 / tl.sqrt(var + eps)`: the rows whose variance is near or below eps "
                "(here a row of spread 0.002) show the difference."
            )
    if _close(got, (centred * std * w + b).astype(np.float32), rtol=1e-4, atol=1e-4):
        return (
            "you multiply by sqrt(var + eps) instead of dividing by it: "
            "`rstd = 1 / tl.sqrt(var + eps)`, then `y = (x - mean) * rstd * w + b`."
        )
    if _close(got, _layernorm_np(x, w, np.zeros_like(b)), rtol=1e-4, atol=1e-4):
        return "add the bias b after scaling by w: `y = (x - mean) * rstd * w + b`."
    if _close(got, _layernorm_np(x, np.ones_like(w), b), rtol=1e-4, atol=1e-4):
        return "multiply by the weight w before adding b: `y = (x - mean) * rstd * w + b`."
    divisor = _layernorm_divisor(case, got)
    if divisor:
        return divisor
    affine = _layernorm_affine(x, w, b, got)
    if affine:
        return affine
    rounding = {
        "fp16": _layernorm_np(x.astype(np.float16), w, b),
        "one_pass": _layernorm_one_pass(x, w, b),
    }
    cause = ev.nearest_candidate(got, mismatch.expected, rounding)
    if cause == "fp16":
        return (
            "your output is what x rounded to float16 gives: compute the mean and variance "
            "from x in float32 (`tl.load(...).to(tl.float32)`), and round only when storing."
        )
    if cause == "one_pass":
        return (
            "your output is what a variance computed as E[x^2] - E[x]^2 in float32 gives: "
            "where the values (here near "
            f"{float(np.median(x)):.3g}) are large against their spread, the two terms "
            "cancel; use the mean of (x - mean)^2."
        )
    scale = _layernorm_scale(x, w, b, got)
    if scale:
        return scale
    if kind == "offset":
        return (
            "only the rows of values near 100 (spread 1) are wrong, the cases near 0 were "
            "right: precision is lost where the mean is large against the spread. Check for a "
            "cast of x to float16 and for a variance computed as E[x^2] - E[x]^2 (use the "
            "mean of (x - mean)^2 in float32)."
        )
    if case.extra["strided"]:
        return (
            "only the case where x is a strided view is wrong: a row starts at "
            "`x_ptr + row * x_row_stride`, not `row * n_cols`."
        )
    return (
        "compute, for the row: mean = sum(x) / n_cols; var = sum((x - mean)^2) / n_cols over the "
        "real columns only; y = (x - mean) / sqrt(var + eps) * w + b."
    ) + _relation(case, mismatch)


register(
    triton_exercise(
        id="triton_layernorm",
        chapter=CHAPTER,
        title="Layer norm forward, one program per row",
        signature=LAYERNORM_SIGNATURE,
        launch_text=LAYERNORM_LAUNCH,
        cases=_layernorm_cases,
        hint=_layernorm_hint,
    )
)

# --- triton_matmul ------------------------------------------------------------------------------

MATMUL_SIGNATURE = (
    "matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, "
    "stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, "
    "BLOCK_K: tl.constexpr, ACTIVATION: tl.constexpr)"
)
MATMUL_LAUNCH = (
    "matmul_kernel[(triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))](a, b, c, M, N, K, "
    "*a.stride(), *b.stride(), *c.stride(), BLOCK_M, BLOCK_N, BLOCK_K, ACTIVATION): program "
    "(pid_m, pid_n) computes one BLOCK_M x BLOCK_N tile of c = act(a @ b); a and b float16, c "
    'float32; ACTIVATION is "relu" or "none"; shapes (M, N, K) = (48, 40, 80), (64, 64, 64), '
    "(37, 50, 70) with b a transposed view, and (32, 32, 512) with values in [0, 1)"
)


def _matmul_case(rng, m, n, k, blocks, activation, transposed=False, positive=False):
    low = 0.0 if positive else -1.0
    a = rng.uniform(low, 1.0, (m, k)).astype(np.float16)
    b = rng.uniform(low, 1.0, (k, n)).astype(np.float16)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    product = a32.astype(np.float64) @ b32.astype(np.float64)
    expected = np.maximum(product, 0.0) if activation == "relu" else product
    b_tensor = _tensor(np.ascontiguousarray(b.T)).t() if transposed else _tensor(b)
    bm, bn, bk = blocks
    label = f"M, N, K = {m}, {n}, {k}, blocks {bm}x{bn}x{bk}, ACTIVATION={activation!r}"
    if transposed:
        label += ", b a transposed view"
    if positive:
        label += ", values in [0, 1)"
    return TritonCase(
        label=label,
        grid=(_cdiv(m, bm), _cdiv(n, bn)),
        args={
            "a_ptr": _tensor(a),
            "b_ptr": b_tensor,
            "c_ptr": _nan(m, n),
            "M": m,
            "N": n,
            "K": k,
            "stride_am": k,
            "stride_ak": 1,
            "stride_bk": int(b_tensor.stride(0)),
            "stride_bn": int(b_tensor.stride(1)),
            "stride_cm": n,
            "stride_cn": 1,
        },
        outputs=("c_ptr",),
        expected={"c_ptr": _tensor(expected.astype(np.float32))},
        constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "ACTIVATION": activation},
        rtol=1e-4,
        atol=1e-3,
        extra={
            "a": a32,
            "b": b32,
            "blocks": blocks,
            "activation": activation,
            "transposed": transposed,
            "product": product.astype(np.float32),
        },
    )


def _matmul_cases(rng: np.random.Generator) -> list[TritonCase]:
    return [
        _matmul_case(rng, 48, 40, 80, (32, 32, 32), "relu"),
        _matmul_case(rng, 64, 64, 64, (32, 32, 32), "none"),
        _matmul_case(rng, 37, 50, 70, (16, 32, 32), "relu", transposed=True),
        _matmul_case(rng, 32, 32, 512, (32, 32, 32), "none", positive=True),
    ]


def _fp16_accumulated(a: np.ndarray, b: np.ndarray, block_k: int, activation: str) -> np.ndarray:
    """A float16 accumulator: each block's float32 dot rounded to float16, then added in
    float16."""
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float16)
    for start in range(0, a.shape[1], block_k):
        part = (a[:, start : start + block_k] @ b[start : start + block_k]).astype(np.float16)
        acc = (acc.astype(np.float32) + part.astype(np.float32)).astype(np.float16)
    acc = acc.astype(np.float32)
    return np.maximum(acc, 0) if activation == "relu" else acc


def _matmul_b_read(case: TritonCase, address) -> np.ndarray:
    """a @ b' where b' is what a kernel reads for b when, in K step j, the element of local
    row kk and column n is at flat offset ``address(kk, n, j)`` of b's storage (masked to
    kk < K - j * BLOCK_K and n < N, as the lab's loads are); the activation applied."""
    extra = case.extra
    a, b = extra["a"].astype(np.float64), extra["b"].astype(np.float64)
    (_, _, bk), (k_total, n_total) = extra["blocks"], b.shape
    storage = (b.T if extra["transposed"] else b).ravel()
    kk, n = np.indices((bk, n_total))
    read = np.zeros_like(b)
    for j, start in enumerate(range(0, k_total, bk)):
        rows = min(bk, k_total - start)
        offsets = address(kk[:rows], n[:rows], j)
        inside = (offsets >= 0) & (offsets < storage.size)
        read[start : start + rows] = np.where(
            inside, storage[np.clip(offsets, 0, storage.size - 1)], np.nan
        )
    product = a @ read
    return np.maximum(product, 0) if extra["activation"] == "relu" else product


def _matmul_pointer_candidates(case: TritonCase) -> list[tuple[np.ndarray, str]]:
    """What b gives when its pointers move or are laid out wrongly, each with its hint."""
    sbk, sbn = case.args["stride_bk"], case.args["stride_bn"]
    bk, n_total = case.extra["blocks"][2], case.args["N"]
    advance = (
        "your b pointers move by the wrong amount between K steps: they must move down "
        "BLOCK_K rows of b, `b_ptrs += BLOCK_K * stride_bk` (BLOCK_K alone moves along a row "
        "when b's rows are contiguous)."
    )
    return [
        (_matmul_b_read(case, lambda kk, n, j: kk * sbk + n * sbn + j * bk), advance),
        (_matmul_b_read(case, lambda kk, n, j: kk * sbk + n * sbn + j * bk * sbn), advance),
        (
            _matmul_b_read(case, lambda kk, n, j: (kk + j * bk) * sbn + n * sbk),
            "b's strides are swapped: row k, column n of b is at "
            "`b_ptr + k * stride_bk + n * stride_bn`.",
        ),
        (
            _matmul_b_read(case, lambda kk, n, j: (kk + j * bk) * sbk + n),
            "your b addresses leave out stride_bn: with b a transposed view a column step is "
            "not 1 element; `b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn`.",
        ),
        (
            _matmul_b_read(case, lambda kk, n, j: (kk + j * bk) + n * sbn),
            "your b addresses leave out stride_bk: a row step of b is stride_bk elements; "
            "`b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn`.",
        ),
        (
            _matmul_b_read(case, lambda kk, n, j: (kk + j * bk) * n_total + n),
            "you address b as if its rows were contiguous (row stride N): use its strides, "
            "`b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn`.",
        ),
    ]


def _swapped_programs(case: TritonCase, mismatch: Mismatch) -> bool:
    """The tiles written are those a grid with its two axes exchanged would cover, and they
    are right: ``pid_m`` read from ``tl.program_id(1)`` and ``pid_n`` from axis 0."""
    (gm, gn), (bm, bn, _) = case.grid, case.extra["blocks"]
    if gm == gn or mismatch.wrong.any():
        return False
    rows, cols = np.indices(mismatch.got.shape)
    covered = (rows // bm < gn) & (cols // bn < gm)
    return bool(np.array_equal(mismatch.unwritten, ~covered))


def _matmul_observed(case: TritonCase, mismatch: Mismatch) -> str:
    """Which tiles are wrong or unwritten, when no single mistake reproduces the output."""
    bad = mismatch.wrong | mismatch.unwritten
    bm, bn, _ = case.extra["blocks"]
    region = ev.find_region(mismatch.got, mismatch.expected, wrong=bad)
    tile_rows = sorted({r // bm for r in region.rows})
    tile_cols = sorted({c // bn for c in region.columns})
    said = (
        f"rows {ev.describe_indices(region.rows)} and columns "
        f"{ev.describe_indices(region.columns)} of c are wrong (row tiles "
        f"{ev.describe_indices(tile_rows)}, column tiles {ev.describe_indices(tile_cols)} of "
        f"BLOCK_M x BLOCK_N = {bm} x {bn})"
    )
    if mismatch.unwritten.any() and not mismatch.wrong.any():
        said += ", never written"
    return (
        f"{said}. Check the tile's rows `pid_m * BLOCK_M + tl.arange(0, BLOCK_M)` and columns "
        "`pid_n * BLOCK_N + tl.arange(0, BLOCK_N)`, the K loop (a_ptrs += BLOCK_K * stride_ak, "
        "b_ptrs += BLOCK_K * stride_bk, loads masked with `offs_k < K - k`) and the store's mask."
    ) + _relation(case, mismatch)


def _matmul_k_steps(case: TritonCase, mismatch: Mismatch) -> str:
    """The hint when c is the sum over K steps of one block of a times one block of b that is
    not the right pairing: some K blocks left out, or a's (b's) block j paired with another
    block of b (a), as pointers that do not move give. Each step j reads the first
    min(BLOCK_K, K - j * BLOCK_K) rows of its block, as the lab's masked loads do. "" when no
    such pairing reproduces c."""
    extra = case.extra
    a, b = extra["a"].astype(np.float64), extra["b"].astype(np.float64)
    bk, k_total = extra["blocks"][2], a.shape[1]
    steps = -(-k_total // bk)
    if steps > 4 or steps < 2:
        return ""
    length = [min(bk, k_total - j * bk) for j in range(steps)]

    def part(j, ja, jb):
        n = min(length[j], k_total - ja * bk, k_total - jb * bk)
        return a[:, ja * bk : ja * bk + n] @ b[jb * bk : jb * bk + n]

    def act(total):
        return np.maximum(total, 0) if extra["activation"] == "relu" else total

    got = mismatch.got
    if not np.isfinite(got).all():
        return ""
    every = range(steps)
    k_range = [f"{j * bk}-{j * bk + length[j] - 1}" for j in every]
    said = f"(K = {k_total} in {steps} blocks of BLOCK_K = {bk}: rows {', '.join(k_range)} of b)"
    for size in range(steps - 1, 0, -1):  # a subset of the K steps, the largest first
        for kept in itertools.combinations(every, size):
            total = sum(part(j, j, j) for j in kept)
            if _close(got, act(total), rtol=1e-3, atol=1e-3):
                missing = [j for j in every if j not in kept]
                last = missing == [steps - 1]
                return (
                    f"your c is the sum over K block{'s' if len(kept) > 1 else ''} "
                    f"{ev.describe_indices(kept)} only "
                    f"{said}: K block{'s' if len(missing) > 1 else ''} "
                    f"{ev.describe_indices(missing)} never reach{'es' if len(missing) == 1 else ''}"
                    " the accumulator. "
                    + (
                        f"The last block (k = {(steps - 1) * bk}) is skipped: the K loop must "
                        "run up to K, `for k in range(0, K, BLOCK_K)` (or `tl.cdiv(K, BLOCK_K)` "
                        "steps), the last, partial block masked with `offs_k < K - k`."
                        if last
                        else "Check the K loop's range and that every step adds "
                        "`tl.dot(a, b)` to the accumulator."
                    )
                )
    for prefix in range(bk + 1, k_total):  # the first columns of K only, cut inside a block
        if prefix % bk and _close(got, act(a[:, :prefix] @ b[:prefix]), rtol=1e-3, atol=1e-3):
            # two programs give this (a mask that subtracts k from global offsets, a loop that
            # starts after 0 with pointers from block 0): the hint says what c is, and both
            return (
                f"your c is the product over the first {prefix} of K's {k_total} columns only, "
                f"`a[:, :{prefix}] @ b[:{prefix}, :]` {said}: columns {prefix} to {k_total - 1} "
                "never reach the accumulator. Two things give this: a K mask that cuts a later "
                "step short (with global offsets `offs_k = k + tl.arange(0, BLOCK_K)` the mask is "
                "`offs_k < K`; with `offs_k = tl.arange(0, BLOCK_K)` and pointers that move, it "
                "is `offs_k < K - k`, never both), or a K loop that does not start at 0 "
                "(`for k in range(0, K, BLOCK_K)`)."
            )
    for lo in range(bk, k_total, bk):  # a loop over k from lo, the pointers from block 0
        for hi in range(lo + bk, k_total + bk, bk):
            ks = list(range(lo, min(hi, k_total), bk))
            total = sum(
                a[:, i * bk : i * bk + min(bk, k_total - k)]
                @ b[i * bk : i * bk + min(bk, k_total - k)]
                for i, k in enumerate(ks)
            )
            if _close(got, act(total), rtol=1e-3, atol=1e-3):
                return (
                    f"your c is what a K loop over k = {', '.join(map(str, ks))} gives while "
                    f"the a and b pointers start at their first block {said}: the loop starts "
                    f"at k = {lo}, so it makes {len(ks)} step{'s' if len(ks) > 1 else ''} "
                    f"instead of {steps}, over the pointers' blocks "
                    f"{ev.describe_indices(range(len(ks)))} (masked with `offs_k < K - k` as if "
                    "they were further on). Start it at 0, `for k in range(0, K, BLOCK_K)`."
                )
    for side in ("b", "a"):
        for mapping in itertools.product(every, repeat=steps):
            if mapping == tuple(every):
                continue
            pairs = [(j, m) if side == "b" else (m, j) for j, m in enumerate(mapping)]
            total = sum(part(j, ja, jb) for j, (ja, jb) in enumerate(pairs))
            if not _close(got, act(total), rtol=1e-3, atol=1e-3):
                continue
            other = "a" if side == "b" else "b"
            if set(mapping) == {0}:
                stride = "stride_bk" if side == "b" else "stride_ak"
                lines = "rows" if side == "b" else "columns"
                return (
                    f"your c is what every K step gives with {side}'s first block {said}: "
                    f"{other}'s blocks move along K but {side}'s pointers stay on its first "
                    f"BLOCK_K {lines}. Advance them in the loop, `{side}_ptrs += BLOCK_K * "
                    f"{stride}`."
                )
            pairing = ", ".join(f"{j}->{m}" for j, m in enumerate(mapping))
            return (
                f"your c pairs K block j of {other} with block m of {side} ({pairing}) {said}: "
                f"{side}'s pointers do not follow the K loop; at step k both must point at "
                f"rows k to k + BLOCK_K - 1, `{side}_ptrs += BLOCK_K * stride_{side}k` once "
                "per step."
            )
    for mapping in itertools.product(every, repeat=steps):  # both pointers, the same blocks
        if mapping == tuple(every):
            continue
        total = sum(part(j, m, m) for j, m in enumerate(mapping))
        if not _close(got, act(total), rtol=1e-3, atol=1e-3):
            continue
        schedule = ", ".join(f"{j}->{m}" for j, m in enumerate(mapping))
        by_k = all(m == min(j * (j - 1) // 2, steps - 1) for j, m in enumerate(mapping))
        return (
            f"at K step j your a and b pointers are at K block m (j->m: {schedule}) {said}: "
            "they do not move by one block per step. "
            + (
                "That is what an advance by k, the step's start, gives (0, then BLOCK_K, then "
                "2 * BLOCK_K, ... added up): advance by one block each step, "
                "`a_ptrs += BLOCK_K * stride_ak`, `b_ptrs += BLOCK_K * stride_bk`."
                if by_k
                else "At step j both must point at K block j: advance them by one block per "
                "step, `a_ptrs += BLOCK_K * stride_ak`, `b_ptrs += BLOCK_K * stride_bk`."
            )
        )
    return ""


def _matmul_activation(case: TritonCase, mismatch: Mismatch) -> str:
    """The hint when c, compared with a @ b sign by sign, is the product or 0 on each side in
    another way than the activation asks: min(a @ b, 0) (negatives kept, positives zeroed)
    where relu wants max(a @ b, 0); "" otherwise."""
    got, product = mismatch.got.astype(np.float64), case.extra["product"].astype(np.float64)
    if not np.isfinite(got).all() or case.extra["activation"] != "relu":
        return ""
    sides = {}
    for side, where in (("positive", product > 1e-2), ("negative", product < -1e-2)):
        if where.sum() < 8:
            return ""
        if _close(got[where], product[where], rtol=1e-3, atol=1e-3):
            sides[side] = "kept"
        elif np.all(np.abs(got[where]) <= 1e-3):
            sides[side] = "zeroed"
        else:
            c = float((got[where] * product[where]).sum() / (product[where] ** 2).sum())
            if not _close(got[where], c * product[where], rtol=1e-3, atol=1e-3):
                return ""
            sides[side] = f"{c:.3g} x"
    if sides["positive"] == "kept" and sides["negative"].endswith(" x"):
        factor = sides["negative"][:-2]
        return (
            f"where a @ b is negative your c is {factor} times it (a leaky relu), and where it is "
            "positive c is right. relu sets the negative values to 0, "
            "`acc = tl.maximum(acc, 0.0)`."
        )
    if sides == {"positive": "zeroed", "negative": "kept"}:
        return (
            "your c equals min(a @ b, 0): where a @ b is negative it is kept and where it is "
            "positive c is 0, the opposite of relu. relu keeps the positive values, "
            "`acc = tl.maximum(acc, 0.0)`."
        )
    if sides == {"positive": "zeroed", "negative": "zeroed"}:
        return (
            "your c is 0 everywhere, on both signs of a @ b: the values that reach the store "
            "are zeros. Check that the K loop runs (its range), that the loads' masks let a "
            "and b through, and that you store the accumulator `tl.dot(a, b)` is added to."
        )
    return ""


def _matmul_diagonal_tiles(case: TritonCase, mismatch: Mismatch) -> str:
    """The hint when the tiles written are exactly those of row tile i and column tile i, and
    they are right: each program computes tile (i, i), its rows and columns from one program
    id (offs_n from pid_m, or offs_m from pid_n); "" otherwise."""
    bm, bn, _ = case.extra["blocks"]
    if mismatch.wrong.any():
        return ""
    rows, cols = np.indices(mismatch.got.shape)
    diagonal = rows // bm == cols // bn
    if not np.array_equal(~mismatch.unwritten, diagonal) or diagonal.all():
        return ""
    return (
        "only the tiles of c whose row tile equals their column tile (tile (i, i), with "
        f"BLOCK_M x BLOCK_N = {bm} x {bn}) were written, and they are right: each program "
        "takes its rows and its columns from the same program id. The columns come from "
        "pid_n and the rows from pid_m: `offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)`, "
        "`offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)`."
    )


def _matmul_probe_case(rng: np.random.Generator, size: int = 32) -> TritonCase:
    """One tile, one K step, square a, b and c (M = N = K = BLOCK): a probe in which neither
    the program ids nor the K loop matter, so that only the layouts of a, b and c do."""
    return _matmul_case(rng, size, size, size, (size, size, size), "none")


def _matmul_layout(probe) -> tuple[str, bool]:
    """What a one-tile, one-step square probe shows of the layouts: c equal to a^T @ b,
    a @ b^T or (a @ b)^T names the tensor whose strides are swapped ("" when the probe is
    right or shows none of these), and whether the probe was right."""
    chosen = _matmul_probe_case(np.random.default_rng(7))
    seen = probe(chosen)
    if seen.mismatch is None:
        return "", seen.error is None
    a, b = chosen.extra["a"].astype(np.float64), chosen.extra["b"].astype(np.float64)
    got = seen.mismatch.got
    for pattern, tensor, what, index, right in (
        (a.T @ b, "a", "a^T @ b (a read transposed)", "m, k", "m * stride_am + k * stride_ak"),
        (a @ b.T, "b", "a @ b^T (b read transposed)", "k, n", "k * stride_bk + n * stride_bn"),
        ((a @ b).T, "c", "(a @ b)^T (stored transposed)", "m, n", "m * stride_cm + n * stride_cn"),
    ):
        if _close(got, pattern, rtol=1e-3, atol=1e-3):
            return (
                "on a probe with one 32 x 32 tile and one K step (square a, b and c, so that "
                f"only their layouts matter) your c is {what}: {tensor}'s two strides are "
                f"swapped. Element ({index}) of {tensor} is at `{tensor}_ptr + {right}`."
            ), False
    return "", False


def _matmul_error(case: TritonCase, error: LaunchError, probe) -> str:
    """An access outside a, b or c explained: first by the one-tile, one-step square probe
    (a tensor's strides swapped), then from the elements it reached: a's rows past M while
    its columns stay in the first K block (its pointers moved down the rows between K steps,
    when the probe is right), or b's rows past K in the last, partial K block (the K mask)."""
    if error.kind != "out_of_bounds" or not error.offsets or len(error.program) < 2:
        return ""
    if error.from_source:  # the access's own source named the cause
        return ""
    bm, _, bk = case.extra["blocks"]
    m, k = case.extra["a"].shape
    offsets = np.asarray(error.offsets)
    if error.tensor not in ("a_ptr", "b_ptr", "c_ptr"):
        return ""
    layout, one_step_right = _matmul_layout(probe)
    if layout:
        return layout
    if error.tensor == "a_ptr":
        rows, cols = np.divmod(offsets, case.args["stride_am"])
        own = range(error.program[0] * bm, error.program[0] * bm + bm)
        if (rows >= m).all() and (cols < bk).all() and not np.isin(rows, own).any():
            if not one_step_right:
                return ""
            return (
                f"program {error.program[:2]} read rows {ev.describe_indices(np.unique(rows))} "
                f"of a (a has {m}), in columns {ev.describe_indices(np.unique(cols))}, the "
                f"first K block, although its own rows are {own.start}-{own.stop - 1}; a "
                "probe with a single K step is right. So between K steps your a pointers move "
                "down a's rows (along M) instead of along K: a K step moves a by BLOCK_K "
                "columns, `a_ptrs += BLOCK_K * stride_ak`."
            )
    # an offset past b's end is row r, column c, or (a column index past N) row r - 1,
    # column c + N: the program's own column block tells which index left the tensor
    _, bn, _ = case.extra["blocks"]
    n = case.args["N"]
    if error.tensor == "b_ptr" and case.args["stride_bn"] == 1 and case.args["stride_bk"] == n:
        rows, cols = np.divmod(offsets, n)
        own = range(error.program[1] * bn, error.program[1] * bn + bn)
        if np.isin(cols + n, own).all() and not np.isin(cols, own).any():
            wrapped = ev.describe_indices(np.unique(cols + n))
            return (
                f"program {error.program[:2]} owns b's columns {own.start}-{own.stop - 1}, and "
                f"these offsets are its columns {wrapped} of row "
                f"{ev.describe_indices(np.unique(rows - 1))}: column indices past N = {n}, "
                "which run into the next row and, on the last row, past b's end (read as row "
                f"{ev.describe_indices(np.unique(rows))}, columns "
                f"{ev.describe_indices(np.unique(cols))}, they are not this program's columns). "
                "The load's mask on b's columns lets them through: compare the column index "
                "with N, `offs_n[None, :] < N`."
            )
    # b's rows from K to the end of the last, partial K block (a's columns past K stay inside
    # a, the next row's, so only b's show as an access outside)
    padded = range(k, -(-k // bk) * bk)
    if error.tensor == "b_ptr" and k % bk and case.args["stride_bn"] == 1:
        rows, cols = np.divmod(offsets, case.args["stride_bk"])
        if np.isin(rows, padded).all() and (cols < case.args["N"]).all():
            return (
                f"program {error.program[:2]} read rows {ev.describe_indices(np.unique(rows))} "
                f"of b, past K = {k}: the padding of the last, partial K block (K in blocks of "
                f"BLOCK_K = {bk} ends at {padded.stop}). The load's mask must be False there: "
                "with the mask on N, bound K too; in the step that starts at k the lanes left "
                "are `offs_k[:, None] < K - k` (k counting elements, not blocks, when the "
                "pointers have moved k along K)."
            )
    return ""


def _matmul_hint(case: TritonCase, mismatch: Mismatch, probe) -> str:
    got, extra = mismatch.got, case.extra
    product, activation = extra["product"], extra["activation"]
    a, b, (_, _, block_k) = extra["a"], extra["b"], extra["blocks"]
    if activation == "relu" and _close(got, product, rtol=1e-4, atol=1e-3):
        return (
            'the activation is missing: with ACTIVATION == "relu", apply '
            "`acc = tl.maximum(acc, 0.0)` to the accumulator after the K loop, before the store."
        )
    if activation == "none" and _close(got, np.maximum(product, 0), rtol=1e-4, atol=1e-3):
        return (
            'you applied relu although ACTIVATION is "none": test the constexpr, '
            '`if ACTIVATION == "relu":`.'
        )
    clipped = np.zeros_like(product)
    for start in range(0, a.shape[1], block_k):
        clipped += np.maximum(a[:, start : start + block_k] @ b[start : start + block_k], 0)
    running = np.zeros_like(product, dtype=np.float64)
    for start in range(0, a.shape[1], block_k):
        running = np.maximum(
            running + a[:, start : start + block_k] @ b[start : start + block_k], 0
        )
    if activation == "relu" and (
        _close(got, clipped, rtol=1e-3, atol=1e-3) or _close(got, running, rtol=1e-3, atol=1e-3)
    ):
        return (
            "you applied the activation inside the K loop, to partial results: apply it "
            "once, to the finished float32 accumulator, after the loop (the epilogue)."
        )
    want, accumulated = mismatch.expected, _fp16_accumulated(a, b, block_k, activation)
    rounded = {"output": want.astype(np.float16).astype(np.float32), "acc": accumulated}
    which = ev.nearest_candidate(got, want, rounded)
    if which == "output":
        return (
            "your c holds float16 values: the sums are right but rounded to float16 before "
            "the store; store the float32 accumulator as it is (c is float32)."
        )
    if which == "acc" or _close(got, accumulated, rtol=2e-3, atol=4e-3):
        return (
            "your sums lost precision like a float16 accumulator: keep the accumulator in "
            "float32 (`acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)`, "
            "`acc += tl.dot(a, b)`) and convert only when storing."
        )
    if _swapped_programs(case, mismatch):
        (gm, gn), written = case.grid, ~mismatch.unwritten
        rows = ev.describe_indices(np.flatnonzero(written.any(axis=1)))
        columns = ev.describe_indices(np.flatnonzero(written.any(axis=0)))
        return (
            f"only rows {rows}, columns {columns} of c were written, and they are right: "
            "your program ids are exchanged. The grid's axis 0 counts tiles of rows "
            f"(cdiv(M, BLOCK_M) = {gm}) and axis 1 tiles of columns ({gn}), so "
            "`pid_m = tl.program_id(0)` and `pid_n = tl.program_id(1)`."
        )
    for explained in (_matmul_activation, _matmul_diagonal_tiles):
        found = explained(case, mismatch)
        if found:
            return found
    for pattern, text in _matmul_pointer_candidates(case):
        if np.isfinite(pattern).all() and _close(got, pattern, rtol=1e-3, atol=1e-3):
            return text
    padded = (-case.args["K"]) % block_k  # lanes of the last K step past K
    if padded:
        product = extra["a"].astype(np.float64) @ extra["b"].astype(np.float64) + padded
        ones = np.maximum(product, 0) if activation == "relu" else product
        if _close(got, ones, rtol=1e-3, atol=1e-3):
            return (
                f"every element of c is {padded} too large before the activation, one for each "
                f"lane of the last K step past K = {case.args['K']}: your masked loads give 1 "
                "there (`other=1.0`), and 1 * 1 adds 1 per lane. Masked lanes must add nothing "
                "to a dot product: `other=0.0`."
            )
    steps = _matmul_k_steps(case, mismatch) or _matmul_layout(probe)[0]
    if steps:
        return steps
    if extra["transposed"]:
        return (
            "only the case where b is a transposed view (strides "
            f"({case.args['stride_bk']}, {case.args['stride_bn']})) is wrong; the cases with a "
            "contiguous b were right. Check every use of b's strides: element (k, n) is at "
            "`b_ptr + k * stride_bk + n * stride_bn`, and a K step moves by BLOCK_K * stride_bk."
        )
    return _matmul_observed(case, mismatch)


register(
    triton_exercise(
        id="triton_matmul",
        chapter=CHAPTER,
        title="Tiled matmul with tl.dot, float32 accumulation and a fused activation",
        signature=MATMUL_SIGNATURE,
        launch_text=MATMUL_LAUNCH,
        cases=_matmul_cases,
        hint=_matmul_hint,
        error_hint=_matmul_error,
    )
)

# --- triton_flash_attention -----------------------------------------------------------------------

ATTENTION_SIGNATURE = (
    "attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, "
    "stride_o, sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, "
    "CAUSAL: tl.constexpr)"
)
ATTENTION_LAUNCH = (
    "attention_kernel[(triton.cdiv(seq_len, BLOCK_M),)](q, k, v, o, seq_len, q.stride(0), "
    "k.stride(0), v.stride(0), o.stride(0), 1 / math.sqrt(HEAD_DIM), HEAD_DIM, BLOCK_M, "
    "BLOCK_N, CAUSAL): one head; q, k, v float16 of seq_len x HEAD_DIM, o float32; program i "
    "computes the rows i * BLOCK_M ... of o, looping over blocks of BLOCK_N keys; compared with "
    "scaled_dot_product_attention(q, k, v, is_causal=CAUSAL); seq_len 64, 50, 45 and 40 (one "
    "case whose scores are all very negative)"
)


def _sdpa(q, k, v, causal, scale):
    torch = _torch()
    q, k, v = (torch.from_numpy(t.astype(np.float32)) for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(
        q[None], k[None], v[None], is_causal=causal, scale=scale
    )[0]
    return out.numpy()


def _attention_np(q, k, v, causal, scale, diagonal=True):
    scores = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
    if causal:
        rows, cols = np.indices(scores.shape)
        scores = np.where(cols <= rows if diagonal else cols < rows, scores, -np.inf)
    with np.errstate(invalid="ignore"):
        m = scores.max(axis=1, keepdims=True)
        p = np.exp(scores - m)
        out = (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
    return out.astype(np.float32)


def _flash_np(
    q,
    k,
    v,
    causal,
    scale,
    block,
    mask="diagonal",
    acc_alpha=True,
    sum_alpha=True,
    inverted=False,
    divide=True,
    query_block=0,
    late_acc=False,
    late_sum=False,
    keep=None,
):
    """FlashAttention-2's loop over key blocks of ``block`` in float64, with one step changed:
    ``mask`` "diagonal" (right), "strict" (keys < query), "plus_one" (keys <= query + 1) or
    "zero" (future scores 0 instead of -inf); ``acc_alpha``/``sum_alpha``: the accumulator /
    the running sum rescaled by alpha = exp(m_old - m_new); ``inverted``: alpha the other way
    round; ``divide``: o = acc / l at the end; ``query_block``: with CAUSAL, the loop stops
    after the keys of the query's block of ``query_block`` rows (0: it runs over all keys);
    ``late_acc``/``late_sum``: alpha applied after the new block is added, (acc + p @ v) *
    alpha / (l + rowsum(p)) * alpha; ``keep``: a (query, key) boolean mask applied as -inf
    (then ``causal`` False), a key block that is -inf for a whole row giving NaN as
    exp(-inf - (-inf)) does in a kernel. The reference is the default."""
    scores = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    seq = scores.shape[0]
    if causal:
        rows, cols = np.indices(scores.shape)
        keep = {"strict": cols < rows, "plus_one": cols <= rows + 1}.get(mask, cols <= rows)
        scores = np.where(keep, scores, 0.0 if mask == "zero" else -np.inf)
        if query_block:  # the loop stops after the query's own block of keys
            scores = np.where(cols < (rows // query_block + 1) * query_block, scores, -np.inf)
    m, total = np.full((seq, 1), -np.inf), np.zeros((seq, 1))
    acc = np.zeros((seq, v.shape[1]))
    with np.errstate(all="ignore"):
        for start in range(0, scores.shape[1], block):
            s = scores[:, start : start + block]
            m_new = np.maximum(m, s.max(axis=1, keepdims=True))
            p = np.exp(s - m_new)
            alpha = np.exp(m_new - m) if inverted else np.exp(m - m_new)
            part, pv = p.sum(axis=1, keepdims=True), p @ v[start : start + block].astype(np.float64)
            if late_sum:
                total = (total + part) * alpha
            else:
                total = (total * alpha if sum_alpha else total) + part
            acc = (acc + pv) * alpha if late_acc else (acc * alpha if acc_alpha else acc) + pv
            m = m_new
        out = acc / total if divide else acc
    return out.astype(np.float32)


def _padded_rows(array: np.ndarray, pad: int):
    """``array`` as a view into a buffer whose rows are ``pad`` elements longer: a tensor whose
    row stride differs from its row length (0: a contiguous tensor)."""
    if not pad:
        return _tensor(array)
    buffer = np.zeros((array.shape[0], array.shape[1] + pad), dtype=array.dtype)
    buffer[:, : array.shape[1]] = array
    return _tensor(buffer)[:, : array.shape[1]]


def _attention_case(rng, seq, dim, bm, bn, causal, negative=False, pads=(0, 0, 0), rising=False):
    q, k, v = (rng.standard_normal((seq, dim)).astype(np.float16) for _ in range(3))
    label = f"seq_len={seq}, HEAD_DIM={dim}, blocks {bm}x{bn}, CAUSAL={causal}"
    if rising:  # key j scores 3 j against every query: each query's future keys dominate
        direction = rng.standard_normal(dim)
        direction /= np.linalg.norm(direction)
        q = np.tile(math.sqrt(dim) * direction, (seq, 1)).astype(np.float16)
        k = (3.0 * np.arange(seq)[:, None] * direction).astype(np.float16)
        label += ", scores rising with the key (3 per key)"
    if negative:  # every score near -150: exp(s - 0) is 0 in float32
        direction = rng.standard_normal(dim)
        direction /= np.linalg.norm(direction)
        q = (6.0 * direction + 0.1 * rng.standard_normal((seq, dim))).astype(np.float16)
        k = (-150.0 * math.sqrt(dim) / 6.0 * direction).astype(np.float16)
        k = (k + 0.1 * rng.standard_normal((seq, dim))).astype(np.float16)
        label += ", scores near -150"
    scale = 1.0 / math.sqrt(dim)
    expected = _sdpa(q, k, v, causal, scale)
    return TritonCase(
        label=label,
        grid=(_cdiv(seq, bm),),
        args={
            "q_ptr": _tensor(q),
            "k_ptr": _padded_rows(k, pads[0]),
            "v_ptr": _padded_rows(v, pads[1]),
            "o_ptr": _padded_rows(np.full((seq, dim), np.nan, np.float32), pads[2]),
            "seq_len": seq,
            "stride_q": dim,
            "stride_k": dim + pads[0],
            "stride_v": dim + pads[1],
            "stride_o": dim + pads[2],
            "sm_scale": scale,
        },
        outputs=("o_ptr",),
        expected={"o_ptr": _tensor(expected)},
        constexprs={"HEAD_DIM": dim, "BLOCK_M": bm, "BLOCK_N": bn, "CAUSAL": causal},
        rtol=2e-3,
        atol=2e-3,
        extra={
            "q": q,
            "k": k,
            "v": v,
            "causal": causal,
            "negative": negative,
            "block": bn,
            "rising": rising,
        },
    )


def _attention_cases(rng: np.random.Generator) -> list[TritonCase]:
    return [
        _attention_case(rng, 64, 16, 16, 16, True),
        _attention_case(
            rng, 50, 32, 16, 16, False, pads=(8, 16, 24)
        ),  # strides; HEAD_DIM > BLOCK_N
        _attention_case(rng, 45, 16, 32, 16, True),
        _attention_case(rng, 40, 16, 16, 16, False, negative=True),
        # a causal mask applied after the row maximum lets future keys set it: every visible
        # weight then underflows (lab12_triton_r14)
        _attention_case(rng, 40, 16, 16, 16, True, rising=True),
    ]


#: What one changed step of the loop gives (``_flash_np``'s arguments), and the hint for it.
_ATTENTION_MISTAKES = (
    (
        dict(mask="strict"),
        True,
        "your causal mask is off by one: a query may attend to keys up to and including its own "
        "position, `offs_m[:, None] >= offs_n[None, :]` (yours excludes the diagonal).",
    ),
    (
        dict(mask="plus_one"),
        True,
        "your causal mask is off by one: each query also attends to the key just after it; keep "
        "keys up to and including its own position, `offs_m[:, None] >= offs_n[None, :]`.",
    ),
    (
        dict(mask="zero"),
        True,
        "your masked (future) scores are 0, not -inf: exp(0 - m) still gives them weight; set them "
        "to `-float('inf')` with `tl.where`.",
    ),
    (
        dict(acc_alpha=False),
        False,
        "your accumulator is not rescaled when the running maximum grows: multiply it by "
        "alpha = exp(m_i - m_new) before adding p @ v, as you do for l_i "
        "(`acc = acc * alpha[:, None] + tl.dot(p, v)`).",
    ),
    (
        dict(sum_alpha=False),
        False,
        "your running sum l_i is not rescaled when the running maximum grows: "
        "`l_i = l_i * alpha + tl.sum(p, axis=1)` with alpha = exp(m_i - m_new), as for acc.",
    ),
    (
        dict(acc_alpha=False, sum_alpha=False),
        False,
        "neither acc nor l_i is rescaled when the running maximum grows: multiply both by "
        "alpha = exp(m_i - m_new) before adding the new block.",
    ),
    (
        dict(inverted=True),
        False,
        "your rescale factor is inverted: alpha = exp(m_i - m_new) (old maximum minus new, at "
        "most 1), not exp(m_new - m_i).",
    ),
    (
        dict(divide=False),
        False,
        "your output is acc before the final division: o = acc / l_i[:, None] at the end.",
    ),
    (
        dict(late_acc=True),
        False,
        "your accumulator is rescaled after the new block is added: (acc + p @ v) * alpha "
        "scales the new block's p @ v too (in the first block alpha = exp(-inf) = 0 wipes it). "
        "Rescale the old acc first, `acc = acc * alpha[:, None] + tl.dot(p, v)`.",
    ),
    (
        dict(late_acc=True, late_sum=True),
        False,
        "acc and l_i are rescaled after the new block is added: (acc + p @ v) * alpha scales "
        "the new block too (in the first block alpha = exp(-inf) = 0 wipes it). Rescale the old "
        "values first, `l_i = l_i * alpha + tl.sum(p, axis=1)`, "
        "`acc = acc * alpha[:, None] + tl.dot(p, v)`.",
    ),
)


def _attention_candidates(case: TritonCase) -> list[tuple[np.ndarray, str]]:
    """What each single mistake gives on this case's inputs, with its hint."""
    q, k, v, causal = case.extra["q"], case.extra["k"], case.extra["v"], case.extra["causal"]
    dim, block = q.shape[1], case.extra["block"]
    scale = dim**-0.5
    found = [
        (
            _attention_np(q, k, v, causal, 1.0),
            "your scores are not scaled: multiply q @ k^T by `sm_scale` (1/sqrt(HEAD_DIM)) before "
            "the softmax.",
        ),
        (
            _attention_np(q, k, v, causal, 1.0 / dim),
            "scale the scores by 1/sqrt(HEAD_DIM) (`sm_scale`), not 1/HEAD_DIM.",
        ),
        (
            _attention_np(q, k, v, causal, scale * math.log(2)),
            "your softmax is exp2 of scores not converted: with `tl.exp2`, multiply the scores by "
            "log2(e) = 1.4427 first (or use `tl.exp`).",
        ),
        (
            _attention_np(q, k, v, causal, scale / math.log(2)),
            "your scores are multiplied by log2(e) but exponentiated with `tl.exp`: use `tl.exp2` "
            "with that factor, or `tl.exp` without it.",
        ),
        (
            _attention_np(q, k, v, causal, scale * scale),
            "your scores are scaled twice by sm_scale: multiply q @ k^T by it once.",
        ),
    ]
    if causal:
        found.append(
            (
                _attention_np(q, k, v, False, scale),
                "with CAUSAL your output matches attention without the mask: set the scores of "
                "keys after the query (`offs_n > offs_m`) to -inf before the softmax.",
            )
        )
    else:
        found.append(
            (
                _attention_np(q, k, v, True, scale),
                "CAUSAL is False here: apply the causal mask only `if CAUSAL:`.",
            )
        )
    if k.shape == v.shape:
        found.append(
            (
                _attention_np(q, k, k, causal, scale),
                "your output averages the keys, not the values: the accumulator adds `p @ k` "
                "where `tl.dot(p, v)` belongs (v loaded at the same offsets as k, from `v_ptr`).",
            )
        )
    if causal:  # the loop stops after the query's block, but its own block is left unmasked
        bm = case.constexprs["BLOCK_M"]
        rows, cols = np.indices((q.shape[0], k.shape[0]))
        found.append(
            (
                _flash_np(q, k, v, False, scale, block, keep=cols < (rows // bm + 1) * bm),
                "each query also attends to the later keys of its own block (the last row of "
                "every query block, which has none, is right): stopping the key loop after the "
                "query block skips the future blocks, but the diagonal block still needs the "
                "mask, `tl.where(offs_m[:, None] >= offs_n[None, :], s, -float('inf'))`.",
            )
        )
    for changes, causal_only, text in _ATTENTION_MISTAKES:
        if causal_only and not causal:
            continue
        found.append((_flash_np(q, k, v, causal, scale, block, **changes), text))
        if causal:  # a loop that stops after the query block's keys, as the lab's does
            bm = case.constexprs["BLOCK_M"]
            found.append(
                (_flash_np(q, k, v, causal, scale, block, query_block=bm, **changes), text)
            )
    seq, bm = case.args["seq_len"], case.constexprs["BLOCK_M"]
    if dim == bm and seq % bm == 0:  # o = acc / l_i without [:, None]: l_i runs along d
        scores = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
        if causal:
            rows, cols = np.indices(scores.shape)
            scores = np.where(cols <= rows, scores, -np.inf)
        with np.errstate(invalid="ignore"):
            l_i = np.exp(scores - scores.max(axis=1, keepdims=True)).sum(axis=1)
        starts = np.arange(seq) // bm * bm
        along_d = l_i[starts[:, None] + np.arange(dim)[None, :]]
        right = _attention_np(q, k, v, causal, scale).astype(np.float64)
        found.append(
            (
                (right * l_i[:, None] / along_d).astype(np.float32),
                "your final division broadcasts l_i along the head dimension: `acc / l_i` "
                "divides column d of each query block by row d's sum (it only runs because "
                "HEAD_DIM equals BLOCK_M). Divide each row by its own sum, "
                "`acc / l_i[:, None]`.",
            )
        )
    if seq % block:
        keys = np.vstack([k, np.zeros((-seq % block, dim), np.float16)])
        values = np.vstack([v, np.zeros_like(keys[seq:])])
        rows = np.arange(seq)[:, None]
        scores_keep = None if not causal else (np.arange(len(keys))[None, :] <= rows)
        padded = _padded_attention(q, keys, values, scale, scores_keep)
        found.append(
            (
                padded,
                "the key columns past seq_len count in your softmax (their score is 0, not -inf): "
                "`tl.where(offs_n[None, :] < seq_len, s, -float('inf'))`.",
            )
        )
    return found


def _padded_attention(q, keys, values, scale, keep):
    scores = (q.astype(np.float64) @ keys.astype(np.float64).T) * scale
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    m = scores.max(axis=1, keepdims=True)
    p = np.exp(scores - m)
    return ((p / p.sum(axis=1, keepdims=True)) @ values.astype(np.float64)).astype(np.float32)


def _attention_observed(case: TritonCase, mismatch: Mismatch) -> str:
    """What the comparison shows when no single mistake reproduces the output: which query
    rows (and blocks) are wrong and how their values relate to the right ones."""
    got, want = mismatch.got, mismatch.expected
    bad = mismatch.wrong | mismatch.unwritten
    region = ev.find_region(got, want, wrong=bad, poisoned=mismatch.unwritten)
    relation = ev.find_relation(
        got, want, rtol=case.rtol, atol=case.atol, poisoned=mismatch.unwritten
    )
    bm = case.constexprs["BLOCK_M"]
    seq = case.args["seq_len"]
    rows = region.rows
    said = f"query rows {ev.describe_indices(rows)} of {seq} are wrong"
    query_blocks = sorted({r // bm for r in rows})
    if relation is not None and relation.kind == "row_factor":
        return (
            f"{said}, each by a factor of its own: the weights are right up to their sum. "
            "Check l_i (l_i * alpha + rowsum(p)) and the final o = acc / l_i[:, None]."
        )
    if relation is not None and relation.kind in ("unwritten",):
        return (
            f"{said}: never written. Each program stores its BLOCK_M rows, "
            "`o_ptr + offs_m[:, None] * stride_o + offs_d[None, :]`, masked by `offs_m < seq_len`."
        )
    if relation is not None and relation.kind == "nonfinite":
        return (
            f"{said}: inf or NaN. Look for exp of a large number, 0 * inf or a division by a "
            "running sum that stays 0 (m_i starts at -inf, l_i at 0, alpha = exp(m_i - m_new))."
        )
    if query_blocks == [seq // bm] and seq % bm:
        return (
            f"{said}: only the last, partial block of queries. Check the masks on offs_m "
            "(load of q, store of o) and that padding queries do not change the real ones."
        )
    if rows and rows[0] >= bm and len(rows) == seq - rows[0]:
        return (
            f"{said}: the first {rows[0]} rows are right and every row from there on is wrong. "
            "The first query blocks see fewer key blocks; check what changes from one key "
            "block to the next (the offsets of k and v, the running maximum, the rescale by "
            "alpha)."
        )
    return (
        f"{said} and no single change of the loop that the checker tried reproduces them. "
        "Check each step: s = q @ k^T * sm_scale (masked with -inf), m_new = max(m_i, "
        "rowmax(s)), p = exp(s - m_new), alpha = exp(m_i - m_new), l_i = l_i * alpha + "
        "rowsum(p), acc = acc * alpha + p @ v; o = acc / l_i."
    ) + _relation(case, mismatch)


def _attention_keys_seen(case: TritonCase, mismatch: Mismatch) -> str:
    """The hint when each wrong query row equals attention over one range of whole key blocks
    [lo, hi) only (with the causal mask; no key at all gives NaN), naming which key blocks
    each query block misses; "" when some wrong row matches no such range."""
    q, k, v, causal = (case.extra[n] for n in ("q", "k", "v", "causal"))
    bn, bm = case.extra["block"], case.constexprs["BLOCK_M"]
    seq = q.shape[0]
    scores = (q.astype(np.float64) @ k.astype(np.float64).T) * (q.shape[1] ** -0.5)
    if causal:
        rows, cols = np.indices(scores.shape)
        scores = np.where(cols <= rows, scores, -np.inf)
    got, values = mismatch.got.astype(np.float64), v.astype(np.float64)
    bad = (mismatch.wrong | mismatch.unwritten).any(axis=1)
    windows = _windows(seq, bn)
    seen: dict[int, tuple[int, int]] = {}
    for i in np.flatnonzero(bad):
        for lo, hi in [*windows[1:], (0, 0)]:
            s = scores[i, lo:hi]
            if not np.isfinite(s).any():
                if np.isnan(got[i]).all():
                    seen[i] = (0, 0)
                    break
                continue
            p = np.exp(s - s.max())
            row = (p / p.sum()) @ values[lo:hi]
            if _close(got[i], row, rtol=2e-3, atol=2e-3):
                seen[i] = (lo, hi)
                break
        else:
            return ""
    if not any(hi > lo for lo, hi in seen.values()):
        return ""  # NaN rows alone are no evidence of which keys a row sees
    # the key blocks each wrong query row needs (causal: up to its own position)
    need = {i: (0, min(i + 1, seq) if causal else seq) for i in seen}
    groups: dict[tuple[int, int], list[int]] = {}
    for i, window in seen.items():
        groups.setdefault(window, []).append(i)
    parts = []
    for (lo, hi), rows_ in sorted(groups.items(), key=lambda g: g[1][0])[:4]:
        if hi <= lo:
            keys = "no key at all (they are NaN)"
        elif causal and hi > min(rows_):
            keys = f"keys from {lo} up to their own position only"
        else:
            keys = f"keys {lo}-{hi - 1} only"
        parts.append(f"rows {ev.describe_indices(rows_)} see {keys}")
    said = "; ".join(parts) + ("; ..." if len(groups) > 4 else "")
    own = all(hi == min(i // bm * bm, seq) and lo == 0 for i, (lo, hi) in seen.items())
    last = all(lo == 0 and hi == (seq - 1) // bn * bn for lo, hi in seen.values())
    first = all((lo, hi) == (0, min(bn, seq)) for lo, hi in seen.values())
    short = {hi - i // bm * bm for i, (lo, hi) in seen.items() if lo == 0}
    short = short if all(lo == 0 for lo, _ in seen.values()) else set()
    late = all(lo == i // bm * bm > 0 and hi >= need[i][1] for i, (lo, hi) in seen.items())
    if causal and late:
        # the same output as a loop that keeps only its last key block (acc and l_i zeroed by
        # alpha = exp(-inf - m_new) when m_i is never updated, or reset inside the loop): the
        # causal loop's last block is the query's own; both causes are named (a blind answer
        # that never updated m_i was told only the first)
        cause = (
            "only the keys of each query's own block reach it, from start_m on. Either the loop "
            "over keys starts at start_m, or what the earlier key blocks added is lost before "
            "the last one: acc and l_i multiplied by alpha = exp(m_i - m_new) = 0 because the "
            "running maximum m_i is never updated (`m_i = m_new`) and stays -inf, or reset "
            "inside the loop. With CAUSAL the loop must start at key 0 and run up to "
            "`tl.minimum(start_m + BLOCK_M, seq_len)`, and acc, l_i and m_i carry over from "
            "block to block."
        )
    elif causal and len(short) == 1 and 0 < min(short) < bm:
        cause = (
            f"the loop over keys stops at start_m + {min(short)} in the wrong query blocks, short of "
            f"the block's end: with CAUSAL it must run up to `tl.minimum(start_m + BLOCK_M, "
            f"seq_len)` (BLOCK_M = {bm}), the mask then hiding the keys after each query."
        )
    elif causal and own:
        cause = (
            "each query block misses the key block(s) holding its own positions (the "
            "diagonal): with CAUSAL the loop over keys must run up to the end of the query "
            "block, `tl.minimum(start_m + BLOCK_M, seq_len)`, not stop at start_m (the mask "
            "then hides the keys after each query)."
        )
    elif last:
        cause = (
            f"the last key block (keys {(seq - 1) // bn * bn}-{seq - 1}) never reaches them: "
            "the loop over keys must run up to seq_len, the last, partial block included "
            "(masked with `offs_n < seq_len`)."
        )
    elif first:
        cause = (
            "only the first block of keys reaches them: loop over every block of BLOCK_N keys, "
            "`for start_n in range(0, end, BLOCK_N)`, and advance the k and v offsets with it."
        )
    else:
        lacking = sorted(
            {
                b
                for i, (lo, hi) in seen.items()
                for b in range(need[i][0] // bn, -(-need[i][1] // bn))
                if not lo <= b * bn < hi
            }
        )
        cause = (
            f"key blocks {ev.describe_indices(lacking)} (of BLOCK_N = {bn} keys) are missing "
            "from the rows that need them: check the range of the loop over key blocks "
            "(its start and end) and how the k and v offsets move with it."
        )
    return (
        f"each wrong query row is attention over a part of the keys only (with "
        f"BLOCK_M = {bm}, BLOCK_N = {bn}): {said}. So {cause}"
    )


def _attention_keep(q, k, v, keep, scale) -> np.ndarray:
    """Attention in float64 where query i sees the keys j with ``keep[i, j]`` (NaN rows for a
    query that sees none)."""
    scores = np.where(keep, (q.astype(np.float64) @ k.astype(np.float64).T) * scale, -np.inf)
    with np.errstate(invalid="ignore"):
        m = scores.max(axis=1, keepdims=True)
        p = np.exp(scores - m)
        return ((p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)).astype(np.float32)


def _attention_temperature(case: TritonCase, mismatch: Mismatch) -> str:
    """The hint when the output is attention with the right mask at another temperature: the
    scores multiplied by t instead of sm_scale, t fitted (a scan of log t, then golden
    section), and named when it is a power of sm_scale; "" when no t reproduces the output."""
    q, k, v, causal = (case.extra[n] for n in ("q", "k", "v", "causal"))
    got = mismatch.got.astype(np.float64)
    if not np.isfinite(got).all():
        return ""
    seq = q.shape[0]
    keep = np.tril(np.ones((seq, seq), bool)) if causal else np.ones((seq, seq), bool)

    def error(u: float) -> float:
        return float(np.abs(_attention_keep(q, k, v, keep, math.exp(u)) - got).max())

    grid = np.linspace(math.log(1e-3), math.log(1e3), 49)
    best = float(grid[int(np.argmin([error(u) for u in grid]))])
    lo, hi = best - 0.3, best + 0.3
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(40):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        lo, hi = (lo, b) if error(a) < error(b) else (a, hi)
    t = math.exp((lo + hi) / 2)
    scale = case.args["sm_scale"]
    if not _close(got, _attention_keep(q, k, v, keep, t), rtol=2e-3, atol=2e-3):
        return ""
    if abs(math.log(t / scale)) < 1e-2:
        return ""
    power = math.log(t) / math.log(scale)
    said = (
        f"your output is attention with the scores q @ k^T multiplied by {t:.3g} (a factor "
        f"fitted to your output) instead of sm_scale = {scale:.3g} = 1/sqrt(HEAD_DIM)"
    )
    if abs(power + 1) < 0.02:
        return (
            f"{said}: {t:.3g} is 1 / sm_scale, so your scores are divided by sm_scale, which "
            "is already 1/sqrt(HEAD_DIM). Multiply them by it, "
            "`s = tl.dot(q, tl.trans(k)) * sm_scale`."
        )
    return (
        f"{said}, about sm_scale^{power:.2f}: multiply q @ k^T by sm_scale once, and "
        "take exp of the scaled scores (or exp2 of them times log2(e))."
    )


def _attention_masks(case: TritonCase) -> list[tuple[np.ndarray, str]]:
    """With CAUSAL, FlashAttention's loop with the keep mask of the other triangle (keys at or
    after the query) and with the mask transposed inside each BLOCK_M x BLOCK_N tile, each over
    the key blocks a causal loop visits (up to the end of the query's block) or over all keys;
    a query whose first key blocks are all masked comes out NaN, as in a kernel."""
    q, k, v, causal = (case.extra[n] for n in ("q", "k", "v", "causal"))
    if not causal:
        return []
    bm, bn = case.constexprs["BLOCK_M"], case.constexprs["BLOCK_N"]
    seq = q.shape[0]
    scale = case.args["sm_scale"]
    i, j = np.indices((seq, seq))
    visited = {"causal": j < (i // bm + 1) * bm, "all": np.ones((seq, seq), bool)}
    other = (
        "your output is attention with the causal mask of the other triangle: each query sees "
        "the keys at or after its own position (among the key blocks your loop visits) instead "
        "of those at or before it. Keep key n for query m when m >= n, "
        "`offs_m[:, None] >= offs_n[None, :]`."
    )
    transposed = (
        "your output is attention with the causal mask transposed inside each BLOCK_M x "
        "BLOCK_N tile: the comparison puts the key offsets down the rows and the query offsets "
        "across, but the scores are (query, key), one row per query. Keep "
        "`offs_m[:, None] >= offs_n[None, :]`."
    )
    found = []
    for loop in visited.values():
        found.append((_flash_np(q, k, v, False, scale, bn, keep=loop & (j >= i)), other))
        if bm == bn:
            tile = (j // bn * bn + i % bm) <= (i // bm * bm + j % bn)
            found.append((_flash_np(q, k, v, False, scale, bn, keep=loop & tile), transposed))
    return found


def _attention_nan_from_start(case: TritonCase, mismatch: Mismatch, probe) -> str:
    """The hint when every output is a computed NaN and so is a probe with a single key block
    (one program, 16 queries, 16 keys, no mask): the first key block, where m_i is still
    -inf, already breaks it; "" otherwise."""
    if mismatch.unwritten.any() or not np.isnan(mismatch.got).all():
        return ""
    rng = np.random.default_rng(3)
    chosen = _attention_case(rng, 16, 16, 16, 16, False)
    seen = probe(chosen)
    if seen.mismatch is None or not np.isnan(seen.mismatch.got).all():
        return ""
    return (
        "every output is NaN, and so is a probe with a single key block (16 queries, 16 keys, "
        "no mask): the first key block breaks it, where m_i is still -inf. Any exp taken "
        "against m_i there is inf (inf or NaN follow: inf / inf, inf * 0): p must be "
        "`tl.exp(s - m_new[:, None])`, with the new maximum, and the rescale factor "
        "alpha = exp(m_i - m_new) (0 in the first block; exp(m_new - m_i) is inf)."
    )


def _attention_hint(case: TritonCase, mismatch: Mismatch, probe) -> str:
    got = mismatch.got
    if case.extra["negative"] and _nonfinite(mismatch):
        return (
            "when every score is very negative your output is inf or NaN: start the running "
            "maximum m_i at `-float('inf')`, not 0, so that exp(s - m) is 1 for the largest "
            "score rather than exp(-150) = 0."
        )
    if case.extra.get("rising"):
        rows = np.unique(np.nonzero(mismatch.wrong)[0])
        vanished = np.abs(np.nan_to_num(got[rows], nan=0.0)).max(axis=1) < 1e-6
        if rows.size and (vanished | ~np.isfinite(got[rows]).all(axis=1)).any():
            return (
                "this case gives every key a higher score than the keys before it, so each "
                "query's future keys score far above its visible ones; your output is 0 or NaN "
                "for some queries: the future keys' scores went into the running maximum, and "
                "every visible weight exp(s - m) underflowed. Hide the future keys before the "
                "maximum, `s = tl.where(offs_m[:, None] >= offs_n[None, :], s, -float('inf'))`, "
                "not by zeroing p after the exponential."
            )
    near = dict(rtol=2e-3, atol=2e-3)
    for pattern, text in [*_attention_candidates(case), *_attention_masks(case)]:
        if np.isfinite(pattern).any() and _close(got, pattern, **near):
            return text
    return (
        _attention_keys_seen(case, mismatch)
        or _attention_temperature(case, mismatch)
        or _attention_nan_from_start(case, mismatch, probe)
        or _attention_observed(case, mismatch)
    )


register(
    triton_exercise(
        id="triton_flash_attention",
        chapter=CHAPTER,
        title="FlashAttention-2 forward for one head",
        signature=ATTENTION_SIGNATURE,
        launch_text=ATTENTION_LAUNCH,
        cases=_attention_cases,
        hint=_attention_hint,
    )
)

# --- triton_cross_entropy -----------------------------------------------------------------------

CROSS_ENTROPY_SIGNATURE = (
    "cross_entropy_kernel(h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, "
    "stride_w, HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr)"
)
CROSS_ENTROPY_LAUNCH = (
    "cross_entropy_kernel[(triton.cdiv(n_rows, BLOCK_M),)](h, w, target, loss, n_rows, vocab, "
    "h.stride(0), w.stride(0), HIDDEN, BLOCK_M, BLOCK_V): h (n_rows x HIDDEN) and w (vocab x "
    "HIDDEN) float16, target int64, loss float32 (n_rows,); loss[i] = logsumexp(h[i] @ w.T) - "
    "(h[i] @ w.T)[target[i]], computed BLOCK_V vocabulary entries at a time (BLOCK_V < vocab): "
    "(n_rows, vocab) = (40, 300), (16, 128), (23, 100), logits near +100 in one case, near "
    "-150 in another, and near +100 in the first block only in a third"
)


def _w_misread(w: np.ndarray, stride: int) -> dict[str, np.ndarray]:
    """The vocab x HIDDEN matrix a kernel uses when it reads w (stored vocab x HIDDEN, rows
    ``stride`` apart) with its two indices exchanged: entry (c, d) from offset d * stride + c
    ("dims_times_stride") or d * vocab + c ("hidden_major"); NaN where that leaves w."""
    vocab, hidden = w.shape
    flat = w.astype(np.float64).ravel()
    c, d = np.indices((vocab, hidden))
    found = {}
    for name, offsets in (("dims_times_stride", d * stride + c), ("hidden_major", d * vocab + c)):
        inside = offsets < flat.size
        found[name] = np.where(inside, flat[np.minimum(offsets, flat.size - 1)], np.nan)
    return found


def _cross_entropy_np(h, w, target, block, mistake=""):
    """The loss of each row computed over vocabulary blocks of ``block`` columns, in float64,
    as the reference (``mistake=""``) or with one step changed: "padded" (columns past vocab
    count as logits 0), "unscaled" (running sum never rescaled), "inverted" (rescaled by
    exp(m_new - m)), "lse_added" (each block's log-sum-exp added), "last_block" (the running
    sum overwritten each block), "no_max" (m left out of m + log(s)), "no_target" (target
    logit not subtracted), "local_target" (the target compared with the column in the block;
    "local_target_masked": that pick masked with cols < vocab too),
    "fp16_logits" (the logits rounded to float16), "max_logit" (the row's largest logit
    subtracted instead of the target's), "first_w_block" (the block of w loaded once, before
    the loop: column j's logit uses w's row j mod ``block``)."""
    if mistake == "first_w_block":
        w = w[np.arange(len(w)) % block]
    logits = h.astype(np.float64) @ w.astype(np.float64).T
    if mistake == "fp16_logits":
        logits = logits.astype(np.float16).astype(np.float64)
    rows, vocab = logits.shape
    if mistake == "padded":
        logits = np.hstack([logits, np.zeros((rows, -vocab % block))])
    m, s = np.full((rows, 1), -np.inf), np.zeros((rows, 1))
    added = np.zeros((rows, 1))
    with np.errstate(all="ignore"):
        for start in range(0, logits.shape[1], block):
            chunk = logits[:, start : start + block]
            m_new = np.maximum(m, chunk.max(axis=1, keepdims=True))
            part = np.exp(chunk - m_new).sum(axis=1, keepdims=True)
            alpha = {"unscaled": 1.0, "inverted": np.exp(m_new - m)}.get(mistake, np.exp(m - m_new))
            s = part if mistake == "last_block" else s * alpha + part
            top = chunk.max(axis=1, keepdims=True)
            added += top + np.log(np.exp(chunk - top).sum(axis=1, keepdims=True))
            m = m_new
        lse = added if mistake == "lse_added" else (0.0 if mistake == "no_max" else m) + np.log(s)
    picked = logits[np.arange(rows), target][:, None]
    if mistake == "fp16_target":  # the target's logit as tl.sum(h * w[target]) in float16
        product = h.astype(np.float16) * w[target].astype(np.float16)
        picked = product.sum(axis=1, dtype=np.float16).astype(np.float64)[:, None]
    if mistake == "no_target":
        picked = np.zeros((rows, 1))
    if mistake == "max_logit":
        picked = logits.max(axis=1, keepdims=True)
    if mistake in ("local_target", "local_target_masked"):
        # the block's own column j compared with the target (column start + j past vocab: its
        # -inf logit, or 0 where the pick is also masked with cols < vocab)
        past = -np.inf if mistake == "local_target" else 0.0
        picked = np.zeros((rows, 1))
        for row in range(rows):
            if target[row] >= block:
                continue
            for start in range(0, vocab, block):
                column = start + target[row]
                picked[row, 0] += logits[row, column] if column < vocab else past
    return (lse - picked)[:, 0].astype(np.float32)


def _cross_entropy_case(rng, rows, vocab, hidden, bm, bv, kind="", pads=(0, 0)):
    h = rng.standard_normal((rows, hidden)).astype(np.float16)
    w = (rng.standard_normal((vocab, hidden)) / math.sqrt(hidden)).astype(np.float16)
    label = f"n_rows={rows}, vocab={vocab}, HIDDEN={hidden}, BLOCK_M={bm}, BLOCK_V={bv}"
    if kind:
        direction = rng.standard_normal(hidden)
        direction /= np.linalg.norm(direction)
        level = -150.0 if kind == "negative" else 100.0  # logits near this value
        h = (8.0 * direction + 0.05 * rng.standard_normal((rows, hidden))).astype(np.float16)
        scale = np.full((vocab, 1), level / 8.0)
        if kind == "first_block":  # +100 in the first block of BLOCK_V columns, 0 after it
            scale[bv:] = 0.0
        w = (scale * direction + 0.05 * rng.standard_normal((vocab, hidden))).astype(np.float16)
        label += (
            f", logits near {level:+g} in the first {bv} columns, near 0 after them"
            if kind == "first_block"
            else f", logits near {level:+g}"
        )
    target = rng.integers(0, vocab, rows).astype(np.int64)
    target[0] = vocab - 1  # the last column, in the last (partial) block
    expected = _cross_entropy_np(h, w, target, bv)
    return TritonCase(
        label=label,
        grid=(_cdiv(rows, bm),),
        args={
            "h_ptr": _padded_rows(h, pads[0]),
            "w_ptr": _padded_rows(w, pads[1]),
            "target_ptr": _tensor(target),
            "loss_ptr": _nan(rows),
            "n_rows": rows,
            "vocab": vocab,
            "stride_h": hidden + pads[0],
            "stride_w": hidden + pads[1],
        },
        outputs=("loss_ptr",),
        expected={"loss_ptr": _tensor(expected)},
        constexprs={"HIDDEN": hidden, "BLOCK_M": bm, "BLOCK_V": bv},
        rtol=1e-4,
        atol=2e-4,
        extra={"h": h, "w": w, "target": target, "kind": kind, "block": bv},
    )


def _cross_entropy_cases(rng: np.random.Generator) -> list[TritonCase]:
    return [
        _cross_entropy_case(rng, 40, 300, 32, 16, 64),
        _cross_entropy_case(rng, 16, 128, 16, 16, 64, pads=(8, 16)),  # two row strides
        _cross_entropy_case(rng, 23, 100, 16, 16, 32, "large"),
        _cross_entropy_case(rng, 20, 100, 16, 16, 32, "negative"),
        _cross_entropy_case(rng, 16, 100, 16, 16, 32, "first_block"),
    ]


LOCAL_TARGET = (
    "the target's logit is picked with the column inside the block, so target t matches "
    "column t of every block (and a target of BLOCK_V or more none): compare the target with "
    "the global column, `v0 + tl.arange(0, BLOCK_V)`."
)

#: A changed step of the loop (``_cross_entropy_np``'s mistake) and its hint.
_CROSS_ENTROPY_MISTAKES = (
    (
        "padded",
        "the vocabulary columns past `vocab` count in your log-sum-exp (as logits 0): give them "
        "-inf (`tl.where(cols[None, :] < vocab, logits, -float('inf'))`).",
    ),
    (
        "unscaled",
        "your running sum is not rescaled when the maximum grows: "
        "`s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)`.",
    ),
    (
        "inverted",
        "your rescale factor is inverted: multiply the running sum by exp(m - m_new) (old maximum "
        "minus new, at most 1), not exp(m_new - m).",
    ),
    (
        "lse_added",
        "you add up each block's log-sum-exp, but log-sum-exps do not add (log a + log b = "
        "log ab): keep one running maximum m and one running sum s, rescaled by exp(m - m_new), "
        "and take m + log(s) once at the end.",
    ),
    (
        "last_block",
        "only the last block's sum reaches your loss: the running sum is replaced in each "
        "block; carry it over, `s = s * tl.exp(m - m_new) + tl.sum(...)`.",
    ),
    (
        "no_max",
        "your log-sum-exp leaves out the maximum: s is a sum of exp(logits - m), so "
        "logsumexp = m + log(s).",
    ),
    (
        "no_target",
        "the target's logit is not subtracted: loss = logsumexp(logits) - logits[target].",
    ),
    ("local_target", LOCAL_TARGET),
    ("local_target_masked", LOCAL_TARGET),
    (
        "max_logit",
        "your loss subtracts the row's largest logit (m + log(s) - m = log(s)), not the "
        "target's: pick the logit of the column that equals the row's target, "
        "`tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)`.",
    ),
    (
        "first_w_block",
        "every vocabulary block of yours uses the logits of the first block's rows of w: the "
        "block of w is loaded once, before the loop. Load it inside the loop, at the block's "
        "own columns, `w_ptr + cols[:, None] * stride_w + dims[None, :]`.",
    ),
)


def _cross_entropy_observed(case: TritonCase, mismatch: Mismatch) -> str:
    """What the comparison shows when no single mistake reproduces the loss."""
    got, want = mismatch.got, mismatch.expected
    bad = mismatch.wrong | mismatch.unwritten
    rows = np.flatnonzero(bad)
    n_rows, vocab, block = case.args["n_rows"], case.args["vocab"], case.extra["block"]
    said = f"the loss of rows {ev.describe_indices(rows)} of {n_rows} is wrong"
    if mismatch.unwritten.any() and not mismatch.wrong.any():
        bm = case.constexprs["BLOCK_M"]
        return (
            f"{said}: never written. Each program stores the loss of its BLOCK_M = {bm} rows, "
            "`tl.store(loss_ptr + rows, loss, mask=rows < n_rows)`."
        )
    in_tail = case.extra["target"] >= (vocab // block) * block
    if vocab % block and in_tail.any() and np.array_equal(bad, in_tail):
        return (
            f"{said}: exactly the rows whose target lies in the last, partial block of the "
            "vocabulary (columns from "
            f"{(vocab // block) * block}). Check how the target's logit is found there: the "
            "masked columns and the comparison of the target with the global column."
        )
    h, w, target = case.extra["h"], case.extra["w"], case.extra["target"]
    picked = np.einsum("ij,ij->i", h.astype(np.float64), w[target].astype(np.float64))
    negative = picked < 0
    if negative.any() and not negative.all() and np.array_equal(bad, negative):
        return (
            f"{said}: exactly the rows whose target logit is negative (the others are right). "
            "Look at how the target's logit is picked out of each block: a maximum against 0 "
            "(the fill of the other columns, or a start of 0) gives 0 for a negative logit; "
            "take it with "
            "`tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)`."
        )
    last_block = target >= ((vocab - 1) // block) * block
    if vocab > block and last_block.any() and np.array_equal(bad, ~last_block):
        return (
            f"{said}: exactly the rows whose target is not in the last block of BLOCK_V = "
            f"{block} columns; rows whose target is in it are right. The target's logit is "
            "replaced in each block instead of kept from the block that holds it: add up "
            "`tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)` over "
            "the blocks."
        )
    relation = ev.find_relation(
        got, want, rtol=case.rtol, atol=case.atol, poisoned=mismatch.unwritten
    )
    if relation is not None and relation.kind == "nonfinite":
        return (
            f"{said}: inf or NaN. Look for exp of a large logit, log(0) or 0 * inf: the running "
            "maximum starts at -inf and the sum at 0, exp is taken of logits - m_new, and the "
            "rescale factor is exp(m - m_new) (0 while m is -inf; exp(m_new - m) is inf)."
        )
    if relation is not None and relation.kind == "offset":
        return (
            f"{said}, all by the same amount, {relation.value:+.4g}: look for a constant "
            "added or left out of loss = m + log(s) - target_logit."
        )
    if np.allclose(got[rows], want[rows] + 2 * picked[rows], rtol=1e-3, atol=1e-3):
        return (
            f"{said}: each is the right loss plus twice the row's target logit, so the target's "
            "logit was added, not subtracted: loss = m + log(s) - target_logit."
        )
    # which column's logit the wrong rows subtracted: logsumexp - yours, found among the row's
    logits = h.astype(np.float64) @ w.astype(np.float64).T
    top = logits.max(axis=1)
    lse = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
    subtracted = lse[rows] - got[rows].astype(np.float64)
    gaps = np.abs(logits[rows] - subtracted[:, None])
    columns = gaps.argmin(axis=1)
    if np.all(gaps[np.arange(rows.size), columns] <= 1e-2 * (1 + np.abs(subtracted))):
        if np.array_equal(columns, rows):
            whose = "column i for row i: the row's own index"
        elif (columns == columns[0]).all():
            whose = f"column {int(columns[0])} for every one of them"
        else:
            whose = "another column than the target's"
        return (
            f"{said}: yours is logsumexp minus the logit of {whose}, not of the row's target. "
            "Pick the target's logit where the global column equals the target, "
            "`tl.where(cols[None, :] == target[:, None], logits, 0.0)` summed over the columns."
        )
    return (
        f"{said} and no single change of the loop that the checker tried reproduces it. "
        "Check each step per block of BLOCK_V columns: logits = tl.dot(h, tl.trans(w_block)) "
        "(float32), -inf past vocab; m_new = max(m, rowmax); s = s * exp(m - m_new) + "
        "rowsum(exp(logits - m_new)); the target's logit where the global column equals "
        "target; finally loss = m + log(s) - target_logit."
    ) + _relation(case, mismatch)


def _windows(n: int, block: int) -> list[tuple[int, int]]:
    """Ranges [lo, hi) of whole blocks of ``block`` along n columns, the full range first, then
    by how much they cover (largest first)."""
    bounds = [*range(0, n, block), n]
    found = [(lo, hi) for lo in bounds for hi in bounds if lo < hi]
    return sorted(found, key=lambda w: (-(w[1] - w[0]), w[0]))


def _said_window(lo: int, hi: int, n: int, block: int, what: str) -> str:
    """Plain words for the columns [lo, hi) of n, in blocks of ``block``."""
    if hi - lo == 0:
        return f"no {what}"
    blocks = ev.describe_indices(range(lo // block, -(-hi // block)))
    return f"{what}s {lo}-{hi - 1} only (block{'s' if hi - lo > block else ''} {blocks})"


def _cross_entropy_window(case: TritonCase, mismatch: Mismatch) -> str:
    """The hint when every row's loss is the log-sum-exp over one range of vocabulary blocks
    only (the target's logit picked inside that range, 0 or right outside it); "" otherwise."""
    h, w, target, block = (case.extra[k] for k in ("h", "w", "target", "block"))
    logits = h.astype(np.float64) @ w.astype(np.float64).T
    rows, vocab = logits.shape
    got = mismatch.got.astype(np.float64)
    true_pick = logits[np.arange(rows), target]
    for lo, hi in _windows(vocab, block)[1:]:
        part = logits[:, lo:hi]
        top = part.max(axis=1)
        lse = top + np.log(np.exp(part - top[:, None]).sum(axis=1))
        inside = (target >= lo) & (target < hi)
        fits = [
            _close(got, lse - np.where(inside, true_pick, outside), rtol=1e-4, atol=2e-4)
            for outside in (0.0, true_pick)
        ]
        if not any(fits):
            continue
        seen = _said_window(lo, hi, vocab, block, "column")
        missing = ev.describe_indices([c for c in range(0, vocab, block) if not lo <= c < hi])
        picked = (
            "; where the target lies outside them, its logit is taken as 0"
            if fits[0] and not fits[1] and (~inside).any()
            else ""
        )
        tail = (
            " (the last, partial one included)" if hi < vocab and vocab % block and lo == 0 else ""
        )
        return (
            f"every row's loss is the log-sum-exp over vocabulary {seen}, of {vocab} columns in "
            f"blocks of BLOCK_V = {block}{picked}: the vocabulary blocks starting at columns "
            f"{missing} never reach your loss. The loop must visit every block of the "
            f"vocabulary{tail}, `for v0 in range(0, vocab, BLOCK_V)`, masked with `cols < vocab`."
        )
    full = logits.max(axis=1) + np.log(
        np.exp(logits - logits.max(axis=1, keepdims=True)).sum(axis=1)
    )
    for lo, hi in _windows(vocab, block)[1:]:  # the log-sum-exp right, the target picked in part
        inside = (target >= lo) & (target < hi)
        if inside.all() or not _close(
            got, full - np.where(inside, true_pick, 0.0), rtol=1e-4, atol=2e-4
        ):
            continue
        rows_out = ev.describe_indices(np.flatnonzero(~inside))
        return (
            "your log-sum-exp is right, but the target's logit is taken as 0 for the rows whose "
            "target lies outside vocabulary "
            f"{_said_window(lo, hi, vocab, block, 'column').replace(' only (', ' (')} "
            f"(rows {rows_out}): pick it in every block of BLOCK_V = {block}, where the global "
            "column `v0 + tl.arange(0, BLOCK_V)` equals the target, and add it up over the loop."
        )
    return ""


def _cross_entropy_reduced(case: TritonCase, mismatch: Mismatch, probe) -> str:
    """The hint when the losses are reduced over rows: every loss the right one divided by
    n_rows (or BLOCK_M), or, on a probe of BLOCK_M identical rows (one program, the tile
    full), every loss log(BLOCK_M) too large: each row's sum adds up the whole tile's rows (a
    ``tl.sum`` without ``axis=1``); "" otherwise."""
    got, want = mismatch.got.astype(np.float64), mismatch.expected.astype(np.float64)
    n_rows, bm = case.args["n_rows"], case.constexprs["BLOCK_M"]
    if np.isfinite(got).all() and not mismatch.unwritten.any():
        c = float(np.dot(got, want) / np.dot(want, want))
        if c > 0 and _close(got, c * want, rtol=1e-4, atol=2e-4):
            for count, what in ((n_rows, "n_rows"), (bm, "BLOCK_M")):
                if abs(c * count - 1) < 1e-3:
                    return (
                        f"every row's loss is the right one divided by {what} = {count}: "
                        "loss_ptr holds one loss per row, logsumexp - target_logit, not their "
                        "mean (the mean over rows is taken afterwards, outside the kernel)."
                    )
    rng = np.random.default_rng(5)
    hidden, bv = case.constexprs["HIDDEN"], case.constexprs["BLOCK_V"]
    chosen = _cross_entropy_case(rng, bm, 2 * bv, hidden, bm, bv)
    h, w = chosen.extra["h"][:1].repeat(bm, axis=0), chosen.extra["w"]
    target = np.full(bm, chosen.extra["target"][1])
    chosen.args["h_ptr"], chosen.args["target_ptr"] = _tensor(h), _tensor(target)
    chosen.expected["loss_ptr"] = _tensor(_cross_entropy_np(h, w, target, bv))
    seen = probe(chosen)
    if seen.mismatch is None:
        return ""
    offset = seen.mismatch.got.astype(np.float64) - seen.mismatch.expected
    if np.isfinite(offset).all() and np.allclose(offset, math.log(bm), atol=2e-3):
        return (
            f"on a probe of {bm} identical rows (one program, BLOCK_M = {bm}) every loss is "
            f"log({bm}) = {math.log(bm):.4g} too large: each row's sum of exp adds up all "
            f"{bm} rows of the tile. Reduce over the vocabulary only, one sum per row: "
            "`tl.sum(..., axis=1)` (and `tl.max(..., axis=1)`)."
        )
    return ""


def _cross_entropy_hint(case: TritonCase, mismatch: Mismatch, probe) -> str:
    kind, got = case.extra["kind"], mismatch.got
    h, w, target, block = (
        case.extra["h"],
        case.extra["w"],
        case.extra["target"],
        case.extra["block"],
    )
    if _nonfinite(mismatch) and kind == "negative":
        return (
            "with logits near -150 your loss is inf or NaN: start the running maximum at "
            "`-float('inf')`, not 0 (from 0, exp(logit - m) underflows to 0 and log(0) = -inf)."
        )
    if _nonfinite(mismatch) and kind == "first_block":
        return (
            f"with logits near +100 in the first {block} columns and near 0 after them, your "
            "loss is inf or NaN: the running maximum must never go down, `m_new = "
            "tl.maximum(m, tl.max(logits, 1))`. A maximum taken from each block alone "
            "rescales the sum by exp(m - m_new) = exp(100) at the second block, which "
            "overflows float32."
        )
    if _nonfinite(mismatch) and kind == "large":
        return (
            "with logits near +100 your loss is inf or NaN: exp(100) overflows float32; keep "
            "a running maximum m and add exp(logits - m)."
        )
    near = dict(rtol=1e-4, atol=2e-4)
    if _close(got, -mismatch.expected, **near):
        return "your loss has the wrong sign: it is logsumexp(logits) - logits[target]."
    for mistake, text in _CROSS_ENTROPY_MISTAKES:
        pattern = _cross_entropy_np(h, w, target, block, mistake)
        if np.isfinite(pattern).any() and _close(got, pattern, **near):
            return text
    rounded = {
        "fp16": _cross_entropy_np(h, w, target, block, "fp16_logits"),
        "fp16_target": _cross_entropy_np(h, w, target, block, "fp16_target"),
    }
    nearest = ev.nearest_candidate(got, mismatch.expected, rounded)
    if nearest == "fp16_target":
        return (
            "your loss is off by the rounding of the target's logit computed in float16 (the "
            "product h * w[target] and its sum over HIDDEN: float16 keeps about 3 decimal "
            "digits; near 100 its values are 0.0625 apart): compute it in float32, from the "
            "float32 logits of `tl.dot` (where the column equals the target) or with "
            "`.to(tl.float32)` before the product."
        )
    if nearest:
        return (
            "your loss is what logits rounded to float16 give: keep the logits and the "
            "running statistics in float32 (`tl.dot` accumulates in float32; do not cast "
            "its result to float16)."
        )
    picked = np.einsum("ij,ij->i", h.astype(np.float64), w[target].astype(np.float64))
    lse = mismatch.expected.astype(np.float64) + picked
    bm, n_rows = case.constexprs["BLOCK_M"], len(picked)
    block_sums = np.array([picked[i // bm * bm : i // bm * bm + bm].sum() for i in range(n_rows)])
    if bm > 1 and n_rows > 1 and _close(got, (lse - block_sums).astype(np.float32), **near):
        return (
            "each row's target logit is the sum of the target logits of all the rows of its "
            f"block of BLOCK_M = {bm}: the `tl.sum` that picks it adds over the whole tile. Sum "
            "over the columns only, one value per row: "
            "`tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)`."
        )
    if _close(got, (np.logaddexp(lse, 0.0) - picked).astype(np.float32), **near):
        return (
            "your log-sum-exp has exactly one term too many, exp(0 - m): one column with logit "
            "0 past the vocabulary. Column `vocab` itself gets in with `cols <= vocab`; the "
            "mask is `cols < vocab`, and masked columns' logits are -inf."
        )
    for misread in _w_misread(w, case.args["stride_w"]).values():
        pattern = _cross_entropy_np(h, misread, target, block)
        if np.isfinite(pattern).all() and _close(got, pattern, **near):
            return (
                "your logits use w read with its two indices exchanged: w is vocab x HIDDEN, "
                "one row per vocabulary entry, so entry (c, d) is at `w_ptr + c * stride_w + d`; "
                "load a BLOCK_V x HIDDEN block, `cols[:, None] * stride_w + dims[None, :]`, and "
                "take `tl.dot(h, tl.trans(w))`."
            )
    return (
        _cross_entropy_window(case, mismatch)
        or _cross_entropy_reduced(case, mismatch, probe)
        or _cross_entropy_observed(case, mismatch)
    )


register(
    triton_exercise(
        id="triton_cross_entropy",
        chapter=CHAPTER,
        title="Chunked cross-entropy that never materialises the logits",
        signature=CROSS_ENTROPY_SIGNATURE,
        launch_text=CROSS_ENTROPY_LAUNCH,
        cases=_cross_entropy_cases,
        hint=_cross_entropy_hint,
    )
)
