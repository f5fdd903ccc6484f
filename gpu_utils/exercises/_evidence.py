"""The course's evidence layer: what a checker observes about a wrong array answer, as data.

A checker compares the array an answer produced (``got``) with the reference (``want``) and
asks two questions before it words a hint:

- ``find_region``: *where* is it wrong? Which elements, rows, columns, positions or blocks;
  whether only the last, partial block is wrong; whether outputs were never written (still the
  NaN poison the checker filled them with) or are inf/NaN where a finite value was expected.
- ``find_relation``: *how* do the wrong values relate to the right ones? Equal up to a constant
  factor (a unit factor 1.024^k among them), a factor per row or per column, a constant offset,
  a shift by k positions along an axis, a transpose, another row's values, zeros or the poison
  left unwritten, or one of the checker's own candidate arrays (``match_candidates``: a partial
  sum over a subset of blocks, a mask shifted by one, a step left out, ...).

``nondeterministic`` compares two runs of the same call on the same inputs. The hint code of a
chapter reads these dataclasses; nothing here returns English that a caller would parse back.
``Region.describe`` and ``Relation.describe`` give plain wording a hint may quote.

Everything works on numpy arrays of any shape; "rows" are the first axis and "columns" the last
axis of a 2-D (or higher) array, "positions" the flat indices of a 1-D one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Evidence",
    "Region",
    "Relation",
    "affine_fit",
    "block_factors",
    "describe_indices",
    "find_region",
    "find_relation",
    "gather",
    "match_candidates",
    "nearest_candidate",
    "nondeterministic",
    "power_of",
    "wrong_mask",
]

#: Relations ``find_relation`` can report, in the order it tries them.
RELATION_KINDS = (
    "unwritten",  # the wrong elements still hold the poison (NaN) the output was filled with
    "nonfinite",  # inf or NaN written where a finite value was expected
    "zeros",  # the wrong elements are 0
    "unit_factor",  # got = want * 1.024**k (k != 0): KiB/KB, MiB/MB, GiB/GB mixed up
    "constant_factor",  # got = want * c for one constant c
    "row_factor",  # got[i, :] = want[i, :] * c_i, c_i not all equal
    "column_factor",  # got[:, j] = want[:, j] * c_j
    "offset",  # got = want + c
    "row_offset",  # got[i, :] = want[i, :] + c_i
    "shift",  # got = want shifted by k positions along an axis
    "transpose",  # got = want.T
    "other_row",  # got's wrong rows hold the values of other rows of want
    "candidate",  # got equals a candidate array the checker supplied
)


def _tolerances(want: np.ndarray, rtol: float, atol: float | None) -> float:
    if atol is not None:
        return atol
    finite = np.abs(want[np.isfinite(want)])
    scale = float(finite.max()) if finite.size else 1.0
    return 1e-6 * max(scale, 1e-30)


def wrong_mask(got, want, rtol: float = 1e-3, atol: float | None = None) -> np.ndarray:
    """Boolean array, True where ``got`` differs from ``want`` beyond ``atol + rtol * |want|``.

    NaN in both counts as equal; NaN or inf in only one counts as wrong. ``atol`` defaults to a
    millionth of ``want``'s largest finite magnitude. Shapes must match (a clear error if not).
    """
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        raise ValueError(
            f"cannot compare arrays of shapes {got.shape} and {want.shape}: reshape one first"
        )
    atol = _tolerances(want, rtol, atol)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    return ~close


@dataclass(frozen=True)
class Region:
    """Where an answer is wrong.

    ``rows``/``columns`` are the indices along the first/last axis holding at least one wrong
    element (for a 1-D array ``rows`` is empty and ``positions`` lists the wrong indices).
    ``blocks`` are the indices of the wrong blocks of ``block`` elements along the last axis.
    ``only_last_block`` is True when the last axis is not a multiple of ``block`` and only its
    last, partial block is wrong. ``unwritten`` counts wrong elements that still hold the NaN
    poison while ``want`` is finite there; ``nonfinite`` counts inf/NaN written where ``want``
    is finite (excluding unwritten ones when a poison mask was given).
    """

    shape: tuple[int, ...]
    n_wrong: int
    n_total: int
    rows: tuple[int, ...] = ()
    columns: tuple[int, ...] = ()
    positions: tuple[int, ...] = ()
    blocks: tuple[int, ...] = ()
    block: int = 0
    only_last_block: bool = False
    unwritten: int = 0
    nonfinite: int = 0
    first: tuple[int, ...] = ()

    @property
    def correct(self) -> bool:
        return self.n_wrong == 0

    @property
    def everywhere(self) -> bool:
        return self.n_total > 0 and self.n_wrong == self.n_total

    @property
    def fraction(self) -> float:
        return self.n_wrong / self.n_total if self.n_total else 0.0

    @property
    def all_rows(self) -> bool:
        return len(self.shape) >= 2 and len(self.rows) == self.shape[0]

    @property
    def all_columns(self) -> bool:
        return len(self.shape) >= 2 and len(self.columns) == self.shape[-1]

    def describe(self) -> str:
        """Plain wording of where it is wrong (for a hint to quote)."""
        if self.correct:
            return "every element is right"
        if self.everywhere:
            return f"all {self.n_total} elements are wrong"
        parts = [f"{self.n_wrong} of {self.n_total} elements are wrong"]
        if len(self.shape) >= 2:
            parts.append(
                f"in rows {describe_indices(self.rows)} and columns {describe_indices(self.columns)}"
            )
        elif self.positions:
            parts.append(f"at positions {describe_indices(self.positions)}")
        if self.only_last_block:
            parts.append(f"(only the last, partial block of {self.block})")
        return " ".join(parts)


def describe_indices(values: Sequence[int], limit: int = 4) -> str:
    """``0-3, 8, 10-12`` for indices, at most ``limit`` runs then ``...``; "none" if empty."""
    values = sorted(int(v) for v in values)
    if not values:
        return "none"
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    text = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:limit]]
    return ", ".join(text) + (", ..." if len(runs) > limit else "")


def find_region(
    got,
    want,
    *,
    rtol: float = 1e-3,
    atol: float | None = None,
    block: int = 0,
    poisoned: np.ndarray | None = None,
    wrong: np.ndarray | None = None,
) -> Region:
    """Where ``got`` differs from ``want``: a ``Region``.

    ``block``: the block size along the last axis (0: none). ``poisoned``: a boolean mask of the
    elements still holding the checker's poison after the call (None: any NaN in ``got`` where
    ``want`` is finite counts as unwritten). ``wrong``: a precomputed wrong mask.
    """
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    bad = wrong_mask(got, want, rtol, atol) if wrong is None else np.asarray(wrong, bool)
    finite_want = np.isfinite(want)
    if poisoned is None:
        poison = np.isnan(got) & finite_want
    else:
        poison = np.asarray(poisoned, bool) & finite_want
    nonfinite = ~np.isfinite(got) & finite_want & ~poison
    n_wrong = int(bad.sum())
    where = np.argwhere(bad)
    first = tuple(int(i) for i in where[0]) if len(where) else ()
    rows: tuple[int, ...] = ()
    columns: tuple[int, ...] = ()
    positions: tuple[int, ...] = ()
    if bad.ndim >= 2:
        rows = tuple(int(i) for i in np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1)))
        columns = tuple(int(i) for i in np.flatnonzero(bad.reshape(-1, bad.shape[-1]).any(axis=0)))
    elif bad.ndim == 1:
        positions = tuple(int(i) for i in np.flatnonzero(bad))
    blocks: tuple[int, ...] = ()
    only_last = False
    if block and bad.ndim >= 1 and bad.shape[-1]:
        n = bad.shape[-1]
        along = bad.reshape(-1, n).any(axis=0)
        nblocks = -(-n // block)
        blocks = tuple(b for b in range(nblocks) if along[b * block : (b + 1) * block].any())
        only_last = n % block != 0 and n_wrong > 0 and blocks == (nblocks - 1,)
    return Region(
        shape=tuple(bad.shape),
        n_wrong=n_wrong,
        n_total=int(bad.size),
        rows=rows,
        columns=columns,
        positions=positions,
        blocks=blocks,
        block=int(block),
        only_last_block=only_last,
        unwritten=int((poison & bad).sum()),
        nonfinite=int((nonfinite & bad).sum()),
        first=first,
    )


@dataclass(frozen=True)
class Relation:
    """How the wrong values relate to the right ones.

    ``kind`` is one of ``RELATION_KINDS``. ``value``: the factor (``constant_factor``), the
    exponent k (``unit_factor``), the offset, or the shift; ``values``: per-row/per-column
    factors or offsets, or for ``other_row`` the row of ``want`` each wrong row holds;
    ``axis``: the axis of a shift; ``name``: the candidate's name (``candidate``).
    ``subset``: True when the relation holds on the wrong elements only (the right ones
    excluded), False when it holds on the whole array.
    """

    kind: str
    value: float = 0.0
    values: tuple[float, ...] = ()
    axis: int = -1
    name: str = ""
    subset: bool = False

    def describe(self) -> str:
        k = self.kind
        if k == "unwritten":
            return "the wrong elements were never written"
        if k == "nonfinite":
            return "the wrong elements are inf or NaN"
        if k == "zeros":
            return "the wrong elements are 0"
        if k == "unit_factor":
            return f"the wrong values are the right ones times 1.024^{int(self.value)}"
        if k == "constant_factor":
            return f"the wrong values are the right ones times {self.value:.4g}"
        if k == "row_factor":
            return "each row is the right row times a factor of its own"
        if k == "column_factor":
            return "each column is the right column times a factor of its own"
        if k == "offset":
            return f"the wrong values are the right ones plus {self.value:.4g}"
        if k == "row_offset":
            return "each row is the right row plus a constant of its own"
        if k == "shift":
            return (
                f"the values are the right ones shifted by {int(self.value)} along axis {self.axis}"
            )
        if k == "transpose":
            return "the result is the transpose of the right one"
        if k == "other_row":
            return "the wrong rows hold the values of other rows"
        if k == "candidate":
            return f"the result matches {self.name}"
        return k


def _fits(got, want, rtol, atol) -> bool:
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))


def _ratio(got, want):
    with np.errstate(divide="ignore", invalid="ignore"):
        return got / want


def _common_factor(got, want, rtol, atol) -> float | None:
    """The constant c with got ~= c * want (least squares), if it fits; None otherwise."""
    use = np.isfinite(got) & np.isfinite(want)
    if not use.any():
        return None
    g, w = got[use], want[use]
    denom = float(np.dot(w, w))
    if denom == 0.0:
        return None
    c = float(np.dot(g, w) / denom)
    if not np.isfinite(c) or not _fits(g, c * w, rtol, atol * max(1.0, abs(c))):
        return None
    return c


def find_relation(
    got,
    want,
    *,
    rtol: float = 1e-3,
    atol: float | None = None,
    poisoned: np.ndarray | None = None,
    max_shift: int = 2,
    candidates: Mapping[str, np.ndarray] | None = None,
) -> Relation | None:
    """The first relation of ``RELATION_KINDS`` that maps ``want`` onto ``got``; None if none.

    Whole-array relations are tried first (a constant factor, a shift, a transpose), then the
    same on the wrong elements only (``subset=True``), so a factor confined to some rows is
    found too. ``candidates``: arrays the checker computed for specific mistakes, tried last
    (see ``match_candidates``); ``max_shift``: the largest shift tried along each axis.
    """
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    atol = _tolerances(want, rtol, atol)
    bad = wrong_mask(got, want, rtol, atol)
    if not bad.any():
        return None
    finite_want = np.isfinite(want)
    poison = (
        np.isnan(got) & finite_want
        if poisoned is None
        else np.asarray(poisoned, bool) & finite_want
    )
    if (poison | ~bad).all() and poison.any():
        return Relation("unwritten", subset=not poison.all())
    if (~np.isfinite(got) | ~bad).all():
        return Relation("nonfinite", subset=not bad.all())
    if np.all(got[bad] == 0):
        return Relation("zeros", subset=not bad.all())

    # A constant factor (a unit factor 1.024^k among them), whole array then wrong part.
    for subset, sel in ((False, np.ones_like(bad)), (True, bad)):
        c = _common_factor(got[sel], want[sel], rtol, atol)
        if c is not None and not np.isclose(c, 1.0, rtol=rtol):
            k = np.log(abs(c)) / np.log(1.024) if c > 0 else 0.0
            if c > 0 and abs(k - round(k)) < 1e-3 and round(k) != 0 and abs(round(k)) <= 9:
                return Relation("unit_factor", value=float(round(k)), subset=subset)
            return Relation("constant_factor", value=c, subset=subset)
    if got.ndim >= 2:
        g2 = got.reshape(got.shape[0], -1)
        w2 = want.reshape(want.shape[0], -1)
        factors = [_common_factor(g2[i], w2[i], rtol, atol) for i in range(g2.shape[0])]
        if all(f is not None for f in factors):
            return Relation("row_factor", values=tuple(float(f) for f in factors))
        gc = got.reshape(-1, got.shape[-1])
        wc = want.reshape(-1, want.shape[-1])
        factors = [_common_factor(gc[:, j], wc[:, j], rtol, atol) for j in range(gc.shape[1])]
        if all(f is not None for f in factors):
            return Relation("column_factor", values=tuple(float(f) for f in factors))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = got - want
    if np.isfinite(diff).all():
        c = float(np.median(diff))
        if _fits(got, want + c, rtol, atol):
            return Relation("offset", value=c)
        if got.ndim >= 2:
            d2 = diff.reshape(diff.shape[0], -1)
            offsets = np.median(d2, axis=1)
            if _fits(d2, np.broadcast_to(offsets[:, None], d2.shape), rtol, atol):
                return Relation("row_offset", values=tuple(float(o) for o in offsets))

    # A shift by k along an axis: got[i + s] == want[i] on the overlapping part, which the
    # unshifted want does not match.
    for axis in range(got.ndim):
        n = got.shape[axis]
        for k in range(1, max_shift + 1):
            for s in (k, -k):
                if n <= abs(s) + 1:
                    continue
                inside = range(max(s, 0), n + min(s, 0))
                a = np.take(got, inside, axis=axis)
                b = np.take(want, range(max(-s, 0), n - max(s, 0)), axis=axis)
                if _fits(a, b, rtol, atol) and not _fits(
                    a, np.take(want, inside, axis=axis), rtol, atol
                ):
                    return Relation("shift", value=float(s), axis=axis)
    if got.ndim == 2 and got.shape[0] == got.shape[1] and _fits(got, want.T, rtol, atol):
        return Relation("transpose")
    if got.ndim >= 2:
        rows = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))
        g2 = got.reshape(got.shape[0], -1)
        w2 = want.reshape(want.shape[0], -1)
        sources = []
        for i in rows:
            match = [j for j in range(w2.shape[0]) if j != i and _fits(g2[i], w2[j], rtol, atol)]
            if not match:
                break
            sources.append(float(match[0]))
        else:
            if sources:
                return Relation("other_row", values=tuple(sources), subset=True)
    if candidates:
        name = match_candidates(got, candidates, rtol=rtol, atol=atol)
        if name is not None:
            return Relation("candidate", name=name)
    return None


def power_of(
    factors: Sequence[float], base: Sequence[float], *, tol: float = 2e-3, spread: float = 0.02
) -> float | None:
    """The exponent p with ``factors[i] == base[i] ** p`` for every i, or None.

    For a per-row factor (``row_factor``) that follows a per-row quantity of the input (a
    variance, a norm, a length): layer norm divided by the variance instead of its square root
    gives p = -1 where p = -1/2 is right. ``tol``: the largest error allowed in log(factor);
    ``spread``: the least spread of log(base) that can tell a power from a constant (rows of
    nearly equal base cannot); both factors and bases must be positive."""
    f = np.asarray(factors, dtype=np.float64)
    b = np.asarray(base, dtype=np.float64)
    if f.shape != b.shape or f.size < 2 or (f <= 0).any() or (b <= 0).any():
        return None
    logf, logb = np.log(f), np.log(b)
    if np.ptp(logb) < spread:
        return None
    p = float(np.dot(logf, logb) / np.dot(logb, logb))
    if np.abs(logf - p * logb).max() > tol * max(1.0, abs(p)):
        return None
    return p


def affine_fit(
    got, base, *, axis: int = 0, rtol: float = 1e-3, atol: float = 1e-3
) -> tuple[np.ndarray, np.ndarray] | None:
    """(p, q) with ``got == p * base + q`` along ``axis`` of a 2-D array: one (p_j, q_j) per
    column for ``axis=0`` (fitted down the rows), one per row for ``axis=1``; None when some
    line fits no such line (least squares, then checked within ``atol + rtol * |got|``).

    For an answer that applies the right per-column or per-row operation with the wrong
    coefficients: layer norm's ``xhat * b + w`` (p = b, q = w: weight and bias swapped), or
    ``x * rstd`` (per row, p = 1 and q = mean * rstd: x not centred)."""
    g = np.asarray(got, dtype=np.float64)
    x = np.asarray(base, dtype=np.float64)
    if g.shape != x.shape or g.ndim != 2 or not (np.isfinite(g).all() and np.isfinite(x).all()):
        return None
    if axis == 1:
        g, x = g.T, x.T
    if g.shape[0] < 3:  # two points fit any line
        return None
    xm, gm = x.mean(axis=0), g.mean(axis=0)
    dx = x - xm
    var = (dx * dx).sum(axis=0)
    if (var <= 1e-12 * max(1.0, float(np.abs(x).max()))).any():
        return None
    p = (dx * (g - gm)).sum(axis=0) / var
    q = gm - p * xm
    if not _fits(g, p * x + q, rtol, atol):
        return None
    return p, q


def block_factors(
    got, want, block: int, *, rtol: float = 1e-3, atol: float = 1e-6
) -> np.ndarray | None:
    """The factor f[i, j] with ``got[i, block j] == f[i, j] * want[i, block j]`` for every row
    i and block j of ``block`` columns of a 2-D array (the last block may be partial); None
    when some block is not a constant multiple of the right one.

    For a row split in blocks that are each right up to a factor (a softmax block normalised
    with the statistics of other blocks than the whole row's)."""
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    if g.shape != w.shape or g.ndim != 2 or block <= 0:
        return None
    starts = range(0, g.shape[1], block)
    factors = np.empty((g.shape[0], len(starts)))
    for i in range(g.shape[0]):
        for j, start in enumerate(starts):
            c = _common_factor(g[i, start : start + block], w[i, start : start + block], rtol, atol)
            if c is None:
                return None
            factors[i, j] = c
    return factors


def match_candidates(
    got,
    candidates: Mapping[str, np.ndarray],
    *,
    rtol: float = 1e-3,
    atol: float | None = None,
    where: np.ndarray | None = None,
) -> str | None:
    """The name of the first candidate array ``got`` equals (on ``where`` if given); None.

    Candidates are what specific mistakes would produce on the same inputs (a partial sum over
    some blocks, a mask shifted by one, a step left out): computed by the checker, so a match
    is evidence, not a guess. A candidate equal to nothing distinguishing is skipped by
    ordering: put the most specific first.
    """
    got = np.asarray(got, dtype=np.float64)
    for name, pattern in candidates.items():
        pattern = np.asarray(pattern, dtype=np.float64)
        if pattern.shape != got.shape:
            continue
        tol = _tolerances(pattern, rtol, atol)
        if where is not None:
            if _fits(got[where], pattern[where], rtol, tol):
                return name
        elif _fits(got, pattern, rtol, tol):
            return name
    return None


def nearest_candidate(
    got, want, candidates: Mapping[str, np.ndarray], *, factor: float = 0.25
) -> str | None:
    """The candidate that explains ``got`` far better than ``want`` does, or None.

    For mistakes that change rounding rather than the formula (a float16 cast, a one-pass
    variance in float32), the checker's candidate reproduces the answer only approximately:
    a candidate wins when its mean distance to ``got`` is at most ``factor`` times that of
    ``want`` and it is the nearest of all candidates (the mean, not the largest distance: an
    element rounded the other way at a tie must not outweigh all the others). NaN distances
    disqualify.
    """
    got = np.asarray(got, dtype=np.float64)

    def distance(pattern) -> float:
        pattern = np.asarray(pattern, dtype=np.float64)
        if pattern.shape != got.shape:
            return np.inf
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(got - pattern)
        return float(d.mean()) if d.size and np.isfinite(d).all() else np.inf

    reference = distance(want)
    scored = sorted((distance(p), name) for name, p in candidates.items())
    if not scored or not np.isfinite(scored[0][0]) or not np.isfinite(reference):
        return None
    best, name = scored[0]
    return name if best <= factor * reference else None


def nondeterministic(first, second, *, rtol: float = 0.0, atol: float = 0.0) -> np.ndarray:
    """Boolean mask of the elements that differ between two runs of one call on one input.

    Exact by default: the same kernel on the same inputs must give the same bits unless it
    reads uninitialised memory, races, or draws random numbers.
    """
    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(second, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"the two runs have shapes {a.shape} and {b.shape}")
    with np.errstate(invalid="ignore"):
        same = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    return ~same


@dataclass(frozen=True)
class Evidence:
    """Everything a checker observed on one case: region, relation, inputs, lines.

    ``inputs`` describes the case (sizes, block, strides: whatever the checker varied);
    ``lines`` the source lines (number, text) that touched the wrong elements, where the
    engine knows them.
    """

    region: Region
    relation: Relation | None = None
    inputs: Mapping[str, object] = field(default_factory=dict)
    lines: tuple[tuple[int, str], ...] = ()


def gather(
    got,
    want,
    *,
    rtol: float = 1e-3,
    atol: float | None = None,
    block: int = 0,
    poisoned: np.ndarray | None = None,
    candidates: Mapping[str, np.ndarray] | None = None,
    inputs: Mapping[str, object] | None = None,
    lines: Sequence[tuple[int, str]] = (),
) -> Evidence:
    """``find_region`` and ``find_relation`` at once, with the case's inputs and lines."""
    region = find_region(got, want, rtol=rtol, atol=atol, block=block, poisoned=poisoned)
    relation = None
    if not region.correct:
        relation = find_relation(
            got, want, rtol=rtol, atol=atol, poisoned=poisoned, candidates=candidates
        )
    return Evidence(region, relation, dict(inputs or {}), tuple(lines))
