"""Lab 12's backward exercise (Triton, chapter 12, section 10): the gradient of the
cross-entropy with respect to the logits, recomputed block by block from the log-sum-exp the
forward saved (Wijmans et al. 2024, "Cut Your Losses in Large-Vocabulary Language Models",
arXiv 2411.09009: the backward recomputes the softmax from the saved log-sum-exp instead of
storing it), checked like every lab 12 kernel (``_triton``: fresh random tensors, NaN-poisoned
outputs, accesses outside the tensors stopped and named, a correct kernel also compiled for a GPU).

- ``triton_cross_entropy_backward``: ``dlogits[i, j] = dloss[i] * (exp(logits[i, j] - lse[i])
  - [j == target[i]])``, one program per row, the row in blocks of ``BLOCK_V`` columns. The
  reference is ``torch.autograd`` of ``logsumexp(logits) - logits[target]`` (the tests compare
  the case's expected values with it).

The cases hold 1, 2 and 3 rows and vocabularies of 1, 3 and 5 columns, vocabularies that are not
powers of two nor multiples of the block and longer than one block, a mean reduction (dloss =
1/N for every row) beside per-row upstream gradients, rows that are not contiguous (two row
strides), and logits near +100 where ``exp(logits)`` alone overflows float32. Hints come from
evidence: the gradient is split into what the answer gave for the softmax part and for the
one-hot part (``_parts``): which columns received the -1 and how they relate to the target,
a factor per row (dloss left out, taken twice or from row 0, the sign), the softmax's factor per
row or per block (another row's log-sum-exp, the row's maximum, no normalisation, a block's own
sum), which rows or columns were never written; a general recipe with what was observed
otherwise.
"""

from __future__ import annotations

import numpy as np

from . import _evidence as ev
from ._kernels import Mismatch
from ._registry import register
from ._triton import TritonCase, register_reducer, row_start, triton_exercise
from ._triton import nan_tensor as _nan
from ._triton import observed_relation as _observed
from ._triton import tensor as _tensor

CHAPTER = "12_triton"

register_reducer()  # a compiled kernel (GPU mode) travels to the checker by its function

SIGNATURE = (
    "cross_entropy_backward_kernel(logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, "
    "vocab, stride_logits, stride_dlogits, BLOCK_V: tl.constexpr)"
)
#: (rows, vocab, BLOCK_V, (logits' row stride, dlogits' row stride) or None, kind)
CASES = (
    (4, 100, 32, None, ""),
    (1, 1, 16, None, ""),
    (2, 3, 16, None, ""),
    (3, 5, 2, None, ""),
    (12, 300, 64, None, "mean"),
    (6, 130, 64, (144, 136), ""),
    (5, 130, 64, None, "large"),
)
LAUNCH = (
    "cross_entropy_backward_kernel[(n_rows,)](logits, target, lse, dloss, dlogits, vocab, "
    "logits.stride(0), dlogits.stride(0), BLOCK_V): program i writes row i of dlogits, "
    "dlogits[i, j] = dloss[i] * (exp(logits[i, j] - lse[i]) - (1 if j == target[i] else 0)), "
    "BLOCK_V columns at a time; lse[i] is row i's log-sum-exp (saved by the forward), dloss[i] "
    "the gradient that reaches row i's loss; logits, lse, dloss and dlogits are float32, target "
    "int64; (n_rows, vocab, BLOCK_V) = (4, 100, 32), (1, 1, 16), (2, 3, 16), (3, 5, 2), "
    "(12, 300, 64) with dloss = 1/12 (a mean), (6, 130, 64) with row strides 144 and 136, "
    "(5, 130, 64) with logits near +100"
)
RECIPE = (
    "Program `row = tl.program_id(0)` loads `target`, `lse` and `dloss` at `+ row`, then for "
    "each block `cols = start + tl.arange(0, BLOCK_V)` (`for start in range(0, vocab, "
    "BLOCK_V)`, mask `cols < vocab`) stores `(tl.exp(x - lse) - tl.where(cols == target, 1.0, "
    "0.0)) * dloss` at `dlogits_ptr + row * stride_dlogits + cols`, x loaded at `logits_ptr + "
    "row * stride_logits + cols`."
)


def gradient(logits: np.ndarray, target: np.ndarray, lse: np.ndarray, dloss: np.ndarray):
    """The reference, in float64: dloss[:, None] * (exp(logits - lse[:, None]) - onehot)."""
    x = logits.astype(np.float64)
    onehot = np.zeros_like(x)
    onehot[np.arange(x.shape[0]), target] = 1.0
    return dloss.astype(np.float64)[:, None] * (
        np.exp(x - lse.astype(np.float64)[:, None]) - onehot
    )


def _case(rng: np.random.Generator, rows, vocab, block, strides, kind) -> TritonCase:
    shape = (rows, strides[0] if strides else vocab)
    logits_base = rng.normal(0.0, 2.0, shape).astype(np.float32)
    if kind == "large":
        logits_base += 100.0  # exp(100) overflows float32 (largest finite about e^88.7)
    logits = logits_base[:, :vocab]
    target = rng.integers(0, vocab, rows).astype(np.int64)
    target[0] = vocab - 1  # the last column, in the last (partial) block
    if rows > 1:
        target[1] = min(1, vocab - 1)  # one in the first block
    lse64 = np.log(np.exp(logits.astype(np.float64) - 100.0 * (kind == "large")).sum(axis=1))
    lse = (lse64 + 100.0 * (kind == "large")).astype(np.float32)
    if kind == "mean":
        dloss = np.full(rows, 1.0 / rows, dtype=np.float32)
    else:
        dloss = rng.uniform(0.5, 2.0, rows).astype(np.float32)
    label = f"n_rows={rows}, vocab={vocab}, BLOCK_V={block}"
    if strides:
        out = _nan(rows, strides[1])[:, :vocab]
        label += f", row strides {strides[0]} (logits) and {strides[1]} (dlogits)"
    else:
        out = _nan(rows, vocab)
    if kind == "mean":
        label += f", dloss = 1/{rows} for every row (a mean)"
    if kind == "large":
        label += ", logits near +100"
    return TritonCase(
        label=label,
        grid=(rows,),
        args={
            "logits_ptr": _tensor(logits_base)[:, :vocab],
            "target_ptr": _tensor(target),
            "lse_ptr": _tensor(lse),
            "dloss_ptr": _tensor(dloss),
            "dlogits_ptr": out,
            "vocab": vocab,
            "stride_logits": shape[1],
            "stride_dlogits": strides[1] if strides else vocab,
        },
        outputs=("dlogits_ptr",),
        expected={"dlogits_ptr": _tensor(gradient(logits, target, lse, dloss).astype(np.float32))},
        constexprs={"BLOCK_V": block},
        rtol=1e-4,
        atol=1e-6,
        extra={
            "logits": logits.astype(np.float64),
            "target": target,
            "lse": lse.astype(np.float64),
            "dloss": dloss.astype(np.float64),
            "block": block,
            "kind": kind,
            "strided": bool(strides),
        },
    )


def _cases(rng: np.random.Generator) -> list[TritonCase]:
    return [_case(rng, *spec) for spec in CASES]


def _close(a: np.ndarray, b: np.ndarray, where: np.ndarray, rtol=1e-3, atol=1e-5) -> bool:
    where = where & np.isfinite(a) & np.isfinite(b)
    if not where.any():
        return False
    return bool(np.allclose(a[where], b[where], rtol=rtol, atol=atol))


def _row_constant(values: np.ndarray, where: np.ndarray, rtol=1e-3) -> np.ndarray | None:
    """One value per row (NaN for a row with nothing to judge) when each row of ``values`` is
    constant on ``where``; None otherwise."""
    found = np.full(values.shape[0], np.nan)
    for i in range(values.shape[0]):
        row = values[i][where[i] & np.isfinite(values[i])]
        if row.size == 0:
            continue
        if not np.allclose(row, row[0], rtol=rtol, atol=1e-9):
            return None
        found[i] = row[0]
    return found if np.isfinite(found).any() else None


def _same(a: np.ndarray, b: np.ndarray, rtol=1e-3) -> bool:
    keep = np.isfinite(a) & np.isfinite(b)
    return bool(keep.any() and np.allclose(a[keep], b[keep], rtol=rtol, atol=1e-9))


def _columns_said(columns) -> str:
    columns = list(columns)
    word = "column" if len(columns) == 1 else "columns"
    return f"{word} {ev.describe_indices(columns)}"


def _onehot_hint(case: TritonCase, subtracted: np.ndarray, written: np.ndarray) -> str:
    """The softmax part is right and ``subtracted`` (what each element lost beside it, in units
    of dloss[i]) is a whole number everywhere: say where the 1 went."""
    target, block = case.extra["target"], case.extra["block"]
    rows = subtracted.shape[0]
    onehot = np.zeros_like(subtracted)
    onehot[np.arange(rows), target] = 1.0
    local = np.zeros_like(subtracted)  # `cols == target` with cols = tl.arange(0, BLOCK_V)
    for i in range(rows):
        if target[i] < block:
            local[i, target[i] :: block] = 1.0
    if _close(subtracted, np.zeros_like(subtracted), written, atol=1e-3):
        return (
            "only the target column of each row is wrong, by +dloss[row]: the gradient is "
            "dloss * (softmax - onehot), and the onehot term is missing. Subtract 1 at column "
            "`target` (`tl.where(cols == target, 1.0, 0.0)`, with `cols` the block's columns "
            "`start + tl.arange(0, BLOCK_V)`)."
        )
    if _close(subtracted, -onehot, written, atol=1e-3):
        return (
            "only the target column of each row is wrong, by +2 * dloss[row]: the 1 was added "
            "there instead of subtracted; the gradient is dloss * (softmax - onehot)."
        )
    if _close(subtracted, 2 * onehot, written, atol=1e-3):
        return (
            "only the target column of each row is wrong, by -dloss[row]: the 1 was subtracted "
            "twice there (once per pass, or in two places); subtract it once."
        )
    if not _close(local, onehot, written, atol=1e-3) and _close(
        subtracted, local, written, atol=1e-3
    ):
        return (
            f"the 1 of the onehot term was subtracted at column start + target of every block of "
            f"BLOCK_V = {block} columns (when target < BLOCK_V), and never for rows whose target "
            "is past the first block: `cols == target` compared the target with "
            "`tl.arange(0, BLOCK_V)`, the position inside the block. Compare it with the column "
            "itself, `cols = start + tl.arange(0, BLOCK_V)`."
        )
    bad = np.flatnonzero((np.abs(subtracted - onehot) > 1e-3).any(axis=1))
    i = int(bad[0]) if bad.size else 0
    columns = np.flatnonzero(np.abs(subtracted[i]) > 0.5)
    return (
        f"the softmax part is right, but the onehot term is not where it belongs: in row {i} "
        f"(target {target[i]}), 1 was subtracted at {_columns_said(columns) if columns.size else 'no column'}"
        f". Subtract it at column target[row] only: `tl.where(cols == target, 1.0, 0.0)` with "
        "`cols = start + tl.arange(0, BLOCK_V)`."
    )


def _scale_hint(case: TritonCase, factors: np.ndarray) -> str:
    """Every row is the right row times factors[i]."""
    d = case.extra["dloss"]
    rows = d.size
    n_said = f" (the mean of {rows} rows: dloss = 1/{rows})" if case.extra["kind"] == "mean" else ""
    if _same(factors, 1.0 / d):
        return (
            f"each row is the right row divided by dloss[row]{n_said}: the gradient was never "
            "multiplied by dloss. Load `dloss = tl.load(dloss_ptr + row)` and multiply the "
            "block by it."
        )
    if _same(factors, d):
        return (
            "each row is the right row times dloss[row] once more: dloss was multiplied in "
            "twice; multiply by it once."
        )
    if rows > 1 and _same(factors, d[0] / d):
        return (
            "every row was multiplied by dloss[0], row 0's upstream gradient: load "
            "`dloss_ptr + row`, the row's own."
        )
    if _same(factors, np.full_like(factors, -1.0)):
        return (
            "every value has the wrong sign: the gradient is dloss * (softmax - onehot), not "
            "dloss * (onehot - softmax)."
        )
    if _same(factors, np.full_like(factors, factors[np.isfinite(factors)][0])):
        value = factors[np.isfinite(factors)][0]
        extra = ""
        if abs(value * rows - 1) < 1e-3 or abs(value - rows) < 1e-3 * rows:
            extra = (
                f" ({'1/' if value < 1 else ''}{rows}, the number of rows: dloss already holds "
                "the mean's 1/N where the loss is a mean; the kernel multiplies by dloss only)"
            )
        return f"every value is the right one times {value:.4g}{extra}. " + RECIPE
    return "each row is the right row times a factor of its own. " + RECIPE


def _softmax_hint(case: TritonCase, factors: np.ndarray) -> str:
    """The softmax part of row i is the right one times factors[i]."""
    x, lse = case.extra["logits"], case.extra["lse"]
    rows = lse.size
    if _same(factors, np.exp(lse)):
        return (
            "the softmax part of each row is exp(logits) itself, not divided by the sum: use "
            "`tl.exp(x - lse)`, with `lse = tl.load(lse_ptr + row)` (this also keeps exp from "
            "overflowing for large logits)."
        )
    if _same(factors, np.exp(lse - x.max(axis=1))):
        return (
            "the softmax part of each row is exp(x - max of the row), not normalised by the sum "
            "of the exponentials: lse_ptr holds the row's log-sum-exp, and `tl.exp(x - lse)` is "
            "the softmax itself."
        )
    for k in range(rows):
        if rows > 1 and _same(factors, np.exp(lse - lse[k])) and not _same(factors, np.ones(rows)):
            return (
                f"the softmax part of every row was normalised with row {k}'s log-sum-exp "
                f"(each row is exp(lse[row] - lse[{k}]) times the right one): load `lse_ptr + "
                "row`, the row's own."
            )
    return (
        "the softmax part of each row is the right one times a factor of its own (the onehot "
        "part is right): the softmax is `tl.exp(x - lse)` with the row's own `lse = "
        "tl.load(lse_ptr + row)`."
    )


def _unwritten_hint(case: TritonCase, mismatch: Mismatch) -> str:
    unwritten, block = mismatch.unwritten, case.extra["block"]
    vocab = unwritten.shape[1]
    bad_rows = np.flatnonzero(unwritten.all(axis=1))
    if bad_rows.size and bad_rows.size == unwritten.any(axis=1).sum():
        return (
            f"rows {ev.describe_indices(bad_rows)} of dlogits were never written, the others "
            "are right: program `row = tl.program_id(0)` writes row `row`, at `dlogits_ptr + "
            "row * stride_dlogits + cols`."
        )
    columns = np.flatnonzero(unwritten.any(axis=0))
    if unwritten[:, columns].all() and columns.size:
        verb = "was" if columns.size == 1 else "were"
        said = (
            f"{_columns_said(columns)} of every row {verb} never written, the others are right "
            f"(vocab = {vocab}, BLOCK_V = {block})"
        )
        tail = columns[-1] == vocab - 1 and columns.size == vocab - columns[0]
        if tail and columns[0] % block:
            return (
                f"{said}: the rest of their block was written, so the mask leaves them out. "
                "It must keep every column below vocab: `cols < vocab` (not `cols < vocab - 1`)."
            )
        if tail:
            return (
                f"{said}: the loop must cover every block of the row, including the last, "
                "partial one: `for start in range(0, vocab, BLOCK_V)` with the mask "
                "`cols < vocab`."
            )
        return f"{said}. " + RECIPE
    return f"{int(unwritten.sum())} elements of dlogits were never written (still NaN). " + RECIPE


def _parts(case: TritonCase, mismatch: Mismatch):
    """(what each element lost beside the softmax, in units of dloss: E where right; the
    softmax part each row was given, divided by the right one: 1 where right)."""
    x, lse, d = case.extra["logits"], case.extra["lse"], case.extra["dloss"]
    target = case.extra["target"]
    rows = x.shape[0]
    p = np.exp(x - lse[:, None])
    scaled = mismatch.got / d[:, None]
    subtracted = p - scaled
    onehot = np.zeros_like(p)
    onehot[np.arange(rows), target] = 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        softmax_factor = np.where(p > 1e-12, (scaled + onehot) / p, np.nan)
    return subtracted, softmax_factor


def _hint(case: TritonCase, mismatch: Mismatch) -> str:
    got, want = mismatch.got, mismatch.expected
    written = ~mismatch.unwritten
    if mismatch.unwritten.any() and not mismatch.wrong.any():
        return _unwritten_hint(case, mismatch)
    bad_finite = ~np.isfinite(got) & np.isfinite(want) & written
    if bad_finite.any():
        if case.extra["kind"] == "large":
            return (
                "inf or NaN appear in the case with logits near +100 (the others were right): "
                "exp(logits) overflows float32 above about e^88.7. Subtract the row's "
                "log-sum-exp first, `tl.exp(x - lse)`: every value is then at most 1."
            )
        return (
            f"inf or NaN written at {int(bad_finite.sum())} elements where finite values were "
            "expected. " + RECIPE
        )
    placed = row_start(
        case, mismatch, want.astype(np.float64), "dlogits_ptr", "stride_dlogits", "stride_logits"
    )
    if placed:
        return placed
    target = case.extra["target"]
    wrong_at = np.argwhere(mismatch.wrong)
    if wrong_at.size and all(target[r] == c for r, c in wrong_at):
        x, lse, d = case.extra["logits"], case.extra["lse"], case.extra["dloss"]
        rows = wrong_at[:, 0]
        p_target = np.exp(x[rows, target[rows]] - lse[rows])
        ratio = got[rows, target[rows]] / d[rows]
        if np.allclose(ratio, -1.0, rtol=1e-3, atol=1e-4):
            return (
                "only each row's target column is wrong; every other column is right. There "
                "yours is -dloss: the target's own probability was dropped. The target's "
                f"gradient is (p_target - 1) x dloss (here p_target = {p_target[0]:.3g}): "
                "subtract 1 from the softmax there, "
                "`tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)`."
            )
        if np.allclose(got[rows, target[rows]], p_target * d[rows] - 1.0, rtol=1e-3, atol=1e-4):
            return (
                "only each row's target column is wrong; every other column is right. There "
                "yours is p_target x dloss - 1: the 1 of the onehot was subtracted after the "
                "multiplication by dloss, so it is not scaled by dloss. The whole difference is "
                "scaled: `(tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)) * dloss`."
            )
    subtracted, softmax_factor = _parts(case, mismatch)
    whole = np.abs(subtracted - np.round(subtracted)) < 1e-3
    if whole[written].all():
        return _onehot_hint(case, subtracted, written)
    nonzero = written & (np.abs(want) > 1e-9)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(nonzero, got / want, np.nan)
    factors = _row_constant(ratio, nonzero)
    if factors is not None:
        return _scale_hint(case, factors)
    row_softmax = _row_constant(softmax_factor, written & np.isfinite(softmax_factor))
    if row_softmax is not None:
        return _softmax_hint(case, row_softmax)
    x, d = case.extra["logits"], case.extra["dloss"]
    block = case.extra["block"]
    if x.shape[1] > block:
        onehot = np.zeros_like(x)
        onehot[np.arange(x.shape[0]), case.extra["target"]] = 1.0
        onehot_free = got / d[:, None] + onehot
        right = np.exp(x - case.extra["lse"][:, None])
        per_block = ev.block_factors(onehot_free, right, block, rtol=1e-3, atol=1e-9)
        if per_block is not None and not np.allclose(per_block, per_block[:, :1], rtol=1e-3):
            return (
                f"within each block of BLOCK_V = {block} columns the softmax part is right up to "
                "a factor, but the factor changes from block to block: each block was normalised "
                "by a sum of its own. The row's log-sum-exp is given (`lse_ptr + row`): "
                "`tl.exp(x - lse)` needs no sum in this kernel."
            )
    onehot = np.zeros_like(x, dtype=np.float64)
    onehot[np.arange(x.shape[0]), case.extra["target"]] = 1.0
    p = np.exp(x.astype(np.float64) - case.extra["lse"][:, None])
    if _close(got, (p * (1 - p) - onehot) * d[:, None], written):
        return (
            "your softmax part is p (1 - p), with p the softmax: the diagonal of the softmax's "
            "Jacobian. Cross-entropy's gradient at the logits is simply p - onehot(target), "
            "`(tl.exp(x - lse) - onehot) * dloss`: the Jacobian's other terms cancel the rest."
        )
    with np.errstate(over="ignore"):
        sigmoid = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    if _close(got, (sigmoid - onehot) * d[:, None], written):
        return (
            "your probabilities are the sigmoid of each logit, 1 / (1 + exp(-x)), as in binary "
            "cross-entropy: each logit on its own. Cross-entropy's are the softmax over the row, "
            "`tl.exp(x - lse)` with the row's saved log-sum-exp (`lse_ptr + row`)."
        )
    log_softmax = x.astype(np.float64) - case.extra["lse"][:, None]
    if _close(got, (log_softmax - onehot) * d[:, None], written):
        return (
            "your softmax part is the log-softmax, x - lse: the softmax is its exp, "
            "`tl.exp(x - lse)`, so dlogits = (tl.exp(x - lse) - onehot) * dloss."
        )
    with np.errstate(over="ignore", divide="ignore"):
        reciprocal = 1.0 / p
    finite = written & np.isfinite(reciprocal) & (reciprocal < 1e30)
    if finite.any() and _close(got, (reciprocal - onehot) * d[:, None], finite):
        return (
            "your softmax part is 1 / softmax, exp(lse - x): the subtraction in the exponent "
            "is the other way round. The softmax is `tl.exp(x - lse)` (every value at most 1)."
        )
    if case.extra["strided"]:
        return (
            "only the case whose rows are not contiguous is wrong (logits' rows are "
            f"{case.args['stride_logits']} apart, dlogits' {case.args['stride_dlogits']}, "
            f"vocab = {x.shape[1]}); the contiguous cases before it were right: row r starts at "
            "`logits_ptr + r * stride_logits` and `dlogits_ptr + r * stride_dlogits`."
        ) + _observed(case, mismatch)
    region = ev.find_region(got, want, wrong=mismatch.wrong | mismatch.unwritten)
    return (
        f"rows {ev.describe_indices(region.rows)} and columns "
        f"{ev.describe_indices(region.columns)} of dlogits are wrong. " + RECIPE
    ) + _observed(case, mismatch)


register(
    triton_exercise(
        id="triton_cross_entropy_backward",
        chapter=CHAPTER,
        title="The cross-entropy's backward, recomputed from the saved log-sum-exp",
        signature=SIGNATURE,
        launch_text=LAUNCH,
        cases=_cases,
        hint=_hint,
    )
)
