"""Exercises of lab 03, first kernels (chapter 03): one thread per element, branches, stencils,
grid-stride loops, 2-D grids, one thread per row, atomics."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..one_gpu.trace import Race
from ._kernels import (
    GUARD_HINT_2D,
    Case,
    KernelError,
    Mismatch,
    blocks_for,
    failing_thread,
    kernel_exercise,
    out_of_bounds,
    poisoned,
    race_hint,
    random_inputs,
)
from ._registry import register

CHAPTER = "03_first_kernels"
THREADS_1D = 128  # four warps per block: enough to keep an SM busy, small enough for the simulator
BLOCK_2D = (16, 16)  # 256 threads; x (columns) first, as cuda.grid(2) returns (x, y)
LAUNCH_2D = (
    f"2-D: blocks of {BLOCK_2D[0]}x{BLOCK_2D[1]} threads, grid (ceil(N/16), ceil(M/16)); "
    "x covers columns and y rows, so `col, row = cuda.grid(2)`"
)

_INDEX_HINT = (
    "compute the global index with `i = cuda.grid(1)` (that is blockIdx.x * blockDim.x + "
    "threadIdx.x); threadIdx.x alone repeats 0..127 in every block."
)


# --- shared by the exercises ------------------------------------------------------------------


def _only_first_block_wrote(mismatch: Mismatch, block: int) -> bool:
    written = ~np.isnan(mismatch.got.ravel())
    return mismatch.got.size > block and written[:block].all() and not written[block:].any()


def _same(got: np.ndarray, candidate: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """True when every element of ``got`` equals ``candidate`` (NaN never matches)."""
    return bool(np.allclose(got, candidate, rtol=rtol, atol=atol, equal_nan=False))


def _failing_thread(case: Case, error: KernelError) -> int | None:
    """The global 1-D index of the thread an index error names, if it names one."""
    where = failing_thread(error, case.blockdim)
    return where[0] if where else None


def _outside_the_matrix(case: Case, error: KernelError) -> bool:
    """True when the thread named in an index error of a 2-D launch has no element of the
    output: its row or column lies past the matrix (the missing-guard mistake)."""
    where = failing_thread(error, case.blockdim)
    if where is None:
        return False
    rows, cols = case.expected[0].shape
    return where[1] >= rows or where[0] >= cols


def _one_d_hint(mismatch: Mismatch, fallback: str) -> str:
    """Hints for the indexing mistakes every 1-D, one-thread-per-element kernel can make."""
    last_only = bool(mismatch.unwritten.ravel()[-1]) and mismatch.unwritten.sum() == 1
    if _only_first_block_wrote(mismatch, THREADS_1D) and last_only:  # n = one block + 1
        return (
            f"only the last element, out[{mismatch.got.size - 1}], is missing. Either the guard "
            "is one short (use `if i < out.size:`, not `i < out.size - 1`), or every block "
            "wrote the same first elements: " + _INDEX_HINT
        )
    if _only_first_block_wrote(mismatch, THREADS_1D):
        return "only the first block's elements were written: " + _INDEX_HINT
    if last_only:
        return (
            "only the last element is missing: the guard is one short. Use `if i < out.size:` "
            "(not `i < out.size - 1`)."
        )
    if mismatch.unwritten.any():
        return "every element needs exactly one thread that writes it: " + _INDEX_HINT
    return fallback


def _reached_with_swapped_indices(case: Case) -> np.ndarray:
    """The elements a 2-D kernel with `row, col = cuda.grid(2)` (x and y swapped) reaches."""
    m, n = case.expected[0].shape
    gx, gy = case.griddim
    return (np.arange(m)[:, None] < gx * BLOCK_2D[0]) & (np.arange(n)[None, :] < gy * BLOCK_2D[1])


def _one_writer_per_element(fix: str) -> Callable[[Race], str]:
    """A race hint for kernels in which each output element has exactly one writer: when two
    threads write one element the fix is the index (``fix``), not an atomic operation."""

    def hint(race: Race) -> str:
        if race.kind == "read-write":
            return race_hint(race)
        return (
            f"two threads wrote {race.element}; each element must be written by exactly one "
            f"thread, so the fix is the index, not an atomic operation: {fix}"
        )

    return hint


_ONE_WRITER_1D = _one_writer_per_element(
    "thread `i = cuda.grid(1)` writes out[i] and nothing else."
)
_ONE_WRITER_2D = _one_writer_per_element(
    "thread `col, row = cuda.grid(2)` writes out[row, col] and nothing else."
)


# --- vector_add -------------------------------------------------------------------------------


def _vector_add_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for n in (1, 129, 256, 1000):  # below, across, at and far past a multiple of the block size
        a, b = random_inputs(rng, n, n)
        cases.append(
            Case(
                label=f"n = {n}",
                griddim=blocks_for(n, THREADS_1D),
                blockdim=THREADS_1D,
                inputs=(a, b),
                outputs=poisoned(n),
                expected=(a + b,),
            )
        )
    return cases


def _vector_add_hint(case: Case, mismatch: Mismatch) -> str:
    a, b = case.inputs
    for formula, wrong, hint in (
        ("a - b", a - b, "add the two inputs: out[i] = a[i] + b[i]."),
        ("a * b", a * b, "add the two inputs: out[i] = a[i] + b[i]."),
        ("a + a", a + a, "you used `a` twice: the second operand is b[i]."),
        ("b + b", b + b, "you used `b` twice: the first operand is a[i]."),
    ):
        if _same(mismatch.got, wrong):
            return f"your output equals {formula}; {hint}"
    return _one_d_hint(mismatch, "each thread i should compute out[i] = a[i] + b[i] for its own i.")


register(
    kernel_exercise(
        id="vector_add",
        chapter=CHAPTER,
        title="Add two vectors, one thread per element",
        signature="vector_add(a, b, out): 1-D float32 arrays of equal length; out[i] = a[i] + b[i]",
        launch_text=f"1-D: {THREADS_1D} threads per block, ceil(n / {THREADS_1D}) blocks",
        output_names=("out",),
        cases=_vector_add_cases,
        hint=_vector_add_hint,
        race_hint=_ONE_WRITER_1D,
    )
)


# --- matmul_naive -----------------------------------------------------------------------------


def _matmul_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    # (M, K, N): square, then shapes where M, K and N all differ and are not multiples of 16;
    # the last has K larger than M and N, so a loop over the wrong dimension comes up short.
    for m, k, n in ((16, 16, 16), (5, 3, 7), (20, 9, 33), (12, 24, 8)):
        a, b = random_inputs(rng, (m, k), (k, n))
        cases.append(
            Case(
                label=f"a {m}x{k}, b {k}x{n}",
                griddim=(blocks_for(n, BLOCK_2D[0]), blocks_for(m, BLOCK_2D[1])),
                blockdim=BLOCK_2D,
                inputs=(a, b),
                outputs=poisoned((m, n)),
                expected=((a.astype(np.float64) @ b).astype(np.float32),),
                rtol=1e-4,
                atol=1e-5 * k,
            )
        )
    return cases


def _matmul_hint(case: Case, mismatch: Mismatch) -> str:
    a, b = case.inputs
    got, expected = mismatch.got, mismatch.expected
    m, k = a.shape
    n = b.shape[1]
    if np.isnan(got).all():
        return (
            "every element is still NaN. The checker fills `out` with NaN (real GPU memory is not "
            "zeroed either), so `out[row, col] += ...` keeps NaN. Accumulate in a local variable "
            "(`acc = 0.0`), then write `out[row, col] = acc` once."
        )
    written = ~np.isnan(got)
    swapped = _reached_with_swapped_indices(case)
    if (written == swapped).all() and np.allclose(
        got[written], expected[written], rtol=1e-4, atol=case.atol
    ):
        return (
            "x runs over columns and y over rows, so write `col, row = cuda.grid(2)`; you have "
            "row and col swapped, which leaves part of a non-square output unwritten."
        )
    if k == n and np.allclose(got, a @ b.T, rtol=1e-4, atol=case.atol):
        return "you used b[col, k]; column `col` of b is b[k, col]."
    for terms in sorted({m, n} - {k}):
        if 0 < terms < k and np.allclose(
            got, a[:, :terms] @ b[:terms, :], rtol=1e-4, atol=case.atol
        ):
            return (
                f"each element sums {terms} products instead of {k}: the inner loop must run over "
                "the shared dimension, `for k in range(a.shape[1])`."
            )
    if mismatch.unwritten.any():
        return "launch covers the whole output; every (row, col) inside it must be written once."
    return "out[row, col] is the dot product of row `row` of a and column `col` of b."


def _matmul_error_hint(case: Case, error: KernelError) -> str:
    a, b = case.inputs
    m, k = a.shape
    if getattr(error, "size", None) == k and k not in (m, b.shape[1]):
        return (
            f"an index ran past K = {k}: the inner loop must run over the shared dimension, "
            "`for k in range(a.shape[1])`."
        )
    return GUARD_HINT_2D if _outside_the_matrix(case, error) else ""


register(
    kernel_exercise(
        id="matmul_naive",
        chapter=CHAPTER,
        title="Matrix product, one thread per output element",
        signature=(
            "matmul_naive(a, b, out): a (M, K), b (K, N), out (M, N), float32; "
            "out[row, col] = sum over k of a[row, k] * b[k, col]"
        ),
        launch_text=LAUNCH_2D,
        output_names=("out",),
        cases=_matmul_cases,
        hint=_matmul_hint,
        guard_hint=GUARD_HINT_2D,
        error_hint=_matmul_error_hint,
        race_hint=_ONE_WRITER_2D,
    )
)


# --- sum_atomic -------------------------------------------------------------------------------


def _sum_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for n in (1, 129, 1000):  # one element, one past a block, many blocks
        (x,) = random_inputs(rng, n, low=0.5, high=1.5)  # positive: no cancellation in the sum
        total = np.float32(x.astype(np.float64).sum())
        cases.append(
            Case(
                label=f"n = {n}",
                griddim=blocks_for(n, THREADS_1D),
                blockdim=THREADS_1D,
                inputs=(x,),
                outputs=(np.zeros(1, dtype=np.float32),),
                expected=(np.array([total], dtype=np.float32),),
                rtol=1e-5,
                atol=1e-6 * n,
            )
        )
    return cases


def _sum_hint(case: Case, mismatch: Mismatch) -> str:
    (x,) = case.inputs
    got = float(mismatch.got[0])
    blocks = case.griddim
    first_block = float(x[:THREADS_1D].astype(np.float64).sum())
    if np.isclose(got, x, rtol=1e-6).any():
        return (
            "out[0] holds a single element, not the sum: `out[0] = x[i]` overwrites. Add with "
            "`cuda.atomic.add(out, 0, x[i])`."
        )
    if blocks > 1 and np.isclose(got, blocks * first_block, rtol=1e-4):
        return "every block added the same first elements: " + _INDEX_HINT
    if np.isclose(got, x.size * float(x[0]), rtol=1e-4):
        return "you added x[0] every time: each thread adds its own element x[i]."
    return (
        "the total is off. If you wrote `out[0] += x[i]`, threads overwrite each other's updates "
        "(a race: read, add and write are separate steps); use `cuda.atomic.add(out, 0, x[i])`."
    )


def _sum_race_hint(race: Race) -> str:
    """Here, unlike in the other exercises, many threads must update one element: an atomic."""
    atomic = (
        "Use `cuda.atomic.add(out, 0, value)` (e.g. `cuda.atomic.add(out, 0, x[i])`), which "
        "reads, adds and writes as one step."
    )
    if race.kind == "write-write":
        return f"every thread writes {race.element}, so each overwrites the others. " + atomic
    if race.kind == "read-modify-write":
        return (
            f"`{race.element} += ...` is a read, an add and a write, and other threads can "
            "write in between, so updates are lost. " + atomic
        )
    return race_hint(race)


def _sum_error_hint(case: Case, error: KernelError) -> str:
    (x,) = case.inputs
    bounds = out_of_bounds(error)
    if bounds and bounds[2] == 1 and x.size != 1:  # the 1-element output, indexed with i
        return (
            "`out` has a single element, out[0], which every thread adds into: "
            "`cuda.atomic.add(out, 0, x[i])` (the index is 0, not i)."
        )
    return ""


register(
    kernel_exercise(
        id="sum_atomic",
        chapter=CHAPTER,
        title="Sum an array with atomic additions",
        signature=(
            "sum_atomic(x, out): x 1-D float32, out a 1-element float32 array set to 0; "
            "afterwards out[0] holds the sum of x"
        ),
        launch_text=f"1-D: {THREADS_1D} threads per block, ceil(n / {THREADS_1D}) blocks",
        output_names=("out",),
        cases=_sum_cases,
        hint=_sum_hint,
        guard_hint="guard the work with `if i < x.size:` so threads past the end do nothing.",
        error_hint=_sum_error_hint,
        race_hint=_sum_race_hint,
    )
)


# --- saxpy ------------------------------------------------------------------------------------


def _saxpy_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    # a is far from 0 and 1 (so a forgotten `a` shows) and fixed, so that messages are repeatable.
    for n, a in ((129, 2.5), (1000, -1.75), (1, 3.0)):
        a = np.float32(a)
        x, y = random_inputs(rng, n, n)
        cases.append(
            Case(
                label=f"n = {n}, a = {a:g}",
                griddim=blocks_for(n, THREADS_1D),
                blockdim=THREADS_1D,
                inputs=(a, x, y),
                outputs=poisoned(n),
                expected=(a * x + y,),
            )
        )
    return cases


def _saxpy_hint(case: Case, mismatch: Mismatch) -> str:
    a, x, y = case.inputs
    got = mismatch.got
    for formula, wrong, hint in (
        ("x + y", x + y, "you left out the factor: multiply x[i] by the scalar `a`."),
        ("a * x", a * x, "you left out the shift: add y[i]."),
        ("a * (x + y)", a * (x + y), "only x is scaled: write a * x[i] + y[i]."),
        ("a * y + x", a * y + x, "you scaled y instead of x: write a * x[i] + y[i]."),
        ("a * x - y", a * x - y, "add y[i] instead of subtracting it."),
    ):
        if _same(got, wrong):
            return f"your output equals {formula}; {hint}"
    return _one_d_hint(mismatch, "each thread i computes out[i] = a * x[i] + y[i] for its own i.")


register(
    kernel_exercise(
        id="saxpy",
        chapter=CHAPTER,
        title="Scale and shift (saxpy), one thread per element",
        signature=(
            "saxpy(a, x, y, out): a a float32 scalar; x, y, out 1-D float32 arrays of equal "
            "length; out[i] = a * x[i] + y[i]"
        ),
        launch_text=f"1-D: {THREADS_1D} threads per block, ceil(n / {THREADS_1D}) blocks",
        output_names=("out",),
        cases=_saxpy_cases,
        hint=_saxpy_hint,
        race_hint=_ONE_WRITER_1D,
    )
)


# --- clamp ------------------------------------------------------------------------------------


def _clamp_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for n, lo, hi in ((200, -0.5, 0.75), (1000, -1.0, 0.25), (7, -0.25, 0.5), (1, -0.25, 0.5)):
        lo, hi = np.float32(lo), np.float32(hi)
        (x,) = random_inputs(rng, n, low=-2.0, high=2.0)  # about half of x lies outside [lo, hi]
        kinds = np.array((lo - 0.5, 0.5 * (lo + hi), hi + 0.5), dtype=np.float32)
        x[: min(n, 3)] = kinds[: min(n, 3)]  # one of each kind in every case of 3 or more
        cases.append(
            Case(
                label=f"n = {n}, lo = {lo:g}, hi = {hi:g}",
                griddim=blocks_for(n, THREADS_1D),
                blockdim=THREADS_1D,
                inputs=(x, lo, hi),
                outputs=poisoned(n),
                expected=(np.clip(x, lo, hi),),
            )
        )
    return cases


def _clamp_hint(case: Case, mismatch: Mismatch) -> str:
    x, lo, hi = case.inputs
    got, expected = mismatch.got, mismatch.expected
    inside = (x >= lo) & (x <= hi)
    if (
        mismatch.unwritten.any()
        and (mismatch.unwritten == inside).all()
        and _same(got[~inside], expected[~inside])
    ):
        return (
            "the elements between lo and hi were never written: every thread must write its "
            "out[i], so add the branch for values in range: `else: out[i] = x[i]`."
        )
    for formula, wrong, hint in (
        ("lo everywhere", np.full_like(x, lo), "min and max are nested the wrong way round"),
        ("hi everywhere", np.full_like(x, hi), "min and max are nested the wrong way round"),
        ("max(x, lo)", np.maximum(x, lo), "values above hi must become hi"),
        ("min(x, hi)", np.minimum(x, hi), "values below lo must become lo"),
        (
            "hi below the range and lo above it",
            np.where(x < lo, hi, np.where(x > hi, lo, x)),
            "lo and hi are swapped: values below lo become lo, values above hi become hi",
        ),
    ):
        if _same(got, wrong):
            return (
                f"your output is {formula}; {hint}. Write `min(max(x[i], lo), hi)`, or an "
                "if/elif/else with one assignment in each branch."
            )
    return _one_d_hint(
        mismatch, "out[i] is lo when x[i] < lo, hi when x[i] > hi, and x[i] otherwise."
    )


register(
    kernel_exercise(
        id="clamp",
        chapter=CHAPTER,
        title="Clamp to [lo, hi], a kernel with a branch",
        signature=(
            "clamp(x, lo, hi, out): x, out 1-D float32 arrays of equal length; lo < hi float32 "
            "scalars; out[i] = lo if x[i] < lo, hi if x[i] > hi, else x[i]"
        ),
        launch_text=f"1-D: {THREADS_1D} threads per block, ceil(n / {THREADS_1D}) blocks",
        output_names=("out",),
        cases=_clamp_cases,
        hint=_clamp_hint,
        race_hint=_ONE_WRITER_1D,
    )
)


# --- stencil_1d -------------------------------------------------------------------------------


def _stencil_reference(x: np.ndarray) -> np.ndarray:
    padded = np.concatenate(([0.0], x.astype(np.float64), [0.0]))
    return ((padded[:-2] + padded[1:-1] + padded[2:]) / 3).astype(np.float32)


def _stencil_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for n in (200, 1000, 2, 1):
        (x,) = random_inputs(rng, n, low=0.5, high=1.5)  # positive, so a dropped term shows
        cases.append(
            Case(
                label=f"n = {n}",
                griddim=blocks_for(n, THREADS_1D),
                blockdim=THREADS_1D,
                inputs=(x,),
                outputs=poisoned(n),
                expected=(_stencil_reference(x),),
            )
        )
    return cases


def _stencil_hint(case: Case, mismatch: Mismatch) -> str:
    (x,) = case.inputs
    got, expected = mismatch.got, mismatch.expected
    n = x.size
    ends = np.zeros(n, dtype=bool)
    ends[[0, -1]] = True
    interior_ok = _same(got[~ends], expected[~ends]) if n > 2 else True
    if n > 2 and interior_ok:
        wrapped = (x[-1] + x[0] + x[1]) / 3
        if np.isclose(got[0], wrapped, rtol=1e-5) and not np.isclose(wrapped, expected[0]):
            return (
                "out[0] used x[-1], which in Numba (as in NumPy) is the last element of x, not a "
                "missing neighbour. Read x[i - 1] only when i > 0, and use 0 otherwise."
            )
        if mismatch.unwritten[ends].all():
            return (
                "the first and last elements were never written: they get a value too. A "
                "neighbour outside the array counts as 0, so out[0] = (x[0] + x[1]) / 3."
            )
        halves = (x[0] + x[1]) / 2, (x[-2] + x[-1]) / 2
        if np.allclose((got[0], got[-1]), halves, rtol=1e-5):
            return (
                "at the ends you averaged the two values that exist; a missing neighbour counts "
                "as 0 and the sum is still divided by 3: out[0] = (x[0] + x[1]) / 3."
            )
        return (
            "the interior is right but the ends are not: a neighbour outside the array counts "
            "as 0, so out[0] = (x[0] + x[1]) / 3 and out[n-1] = (x[n-2] + x[n-1]) / 3."
        )
    if _same(got, 3 * expected, rtol=1e-4):
        return "you summed the three values; divide the sum by 3."
    if n > 3:
        shifted = (x[:-2] + x[1:-1] + x[2:]) / 3  # (x[i] + x[i+1] + x[i+2]) / 3
        if _same(got[: n - 2], shifted, rtol=1e-4):
            return "centre the stencil on i: it reads x[i - 1], x[i] and x[i + 1]."
    return _one_d_hint(mismatch, "out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3, 0 for a missing x.")


def _stencil_error_hint(case: Case, error: KernelError) -> str:
    (x,) = case.inputs
    thread = _failing_thread(case, error)
    bounds = out_of_bounds(error)
    if thread is not None and thread < x.size and bounds and bounds[0] == x.size:
        return (
            f"thread {thread} (the last element) read its right neighbour x[{x.size}], past the "
            "end. Read x[i + 1] only when i + 1 < x.size, and use 0 otherwise."
        )
    if thread is not None and thread >= x.size:
        return "guard the work with `if i < x.size:` so threads past the end do nothing."
    return ""


register(
    kernel_exercise(
        id="stencil_1d",
        chapter=CHAPTER,
        title="A 3-point average: reading neighbours, handling the boundaries",
        signature=(
            "stencil_1d(x, out): x, out 1-D float32 arrays of equal length n; "
            "out[i] = (x[i-1] + x[i] + x[i+1]) / 3, where a neighbour outside the array "
            "counts as 0 (so out[0] = (x[0] + x[1]) / 3)"
        ),
        launch_text=f"1-D: {THREADS_1D} threads per block, ceil(n / {THREADS_1D}) blocks",
        output_names=("out",),
        cases=_stencil_cases,
        hint=_stencil_hint,
        error_hint=_stencil_error_hint,
        race_hint=_ONE_WRITER_1D,
    )
)


# --- square_grid_stride -----------------------------------------------------------------------

STRIDE_GRID = (4, 32)  # blocks, threads per block: 128 threads in all, whatever n is
STRIDE_THREADS = STRIDE_GRID[0] * STRIDE_GRID[1]


def _square_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for n in (1000, 77, 4099):  # many elements per thread, fewer elements than threads, ragged
        (x,) = random_inputs(rng, n, low=-2.0, high=2.0)
        cases.append(
            Case(
                label=f"n = {n}",
                griddim=STRIDE_GRID[0],
                blockdim=STRIDE_GRID[1],
                inputs=(x,),
                outputs=poisoned(n),
                expected=(x * x,),
            )
        )
    return cases


def _square_hint(case: Case, mismatch: Mismatch) -> str:
    (x,) = case.inputs
    got, unwritten = mismatch.got, mismatch.unwritten
    n, t = x.size, STRIDE_THREADS
    index = np.arange(n)
    if unwritten.any() and (unwritten == (index >= t)).all():
        return (
            f"only the first {t} elements were written, one per thread: the grid has {t} "
            f"threads for {n} elements, so each thread must loop, "
            "`for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):`."
        )
    if unwritten.any() and (unwritten == (index % t >= STRIDE_GRID[1])).all():
        return (
            "only elements whose position in each stretch of 128 is below 32 were written: the "
            "loop starts at cuda.threadIdx.x, which is the same in every block. Start at the "
            "global index, cuda.grid(1)."
        )
    if unwritten.any() and (unwritten == (index % t != 0)).all():
        return (
            "every thread started at element 0, so only every 128th element was written: start "
            "the loop at this thread's global index, cuda.grid(1)."
        )
    if unwritten.any() and unwritten[-1] and unwritten.sum() == 1:
        return "only the last element is missing: loop up to x.size, not x.size - 1."
    if not unwritten.any() and _same(got, 2 * x):
        return "your output is 2 * x; square each element: x[i] * x[i]."
    if unwritten.any():
        return (
            "some elements were never written: loop `for i in range(cuda.grid(1), x.size, "
            "cuda.gridsize(1)):`, so that together the threads cover every element."
        )
    return "each element i gets out[i] = x[i] * x[i]."


_square_race_hint = _one_writer_per_element(
    f"the loop's step must be the whole grid, `cuda.gridsize(1)` ({STRIDE_THREADS} threads here), "
    "so that thread t handles elements t, t + 128, t + 256, ... A smaller step such as "
    "cuda.blockDim.x makes every block redo elements that other blocks handle."
)


register(
    kernel_exercise(
        id="square_grid_stride",
        chapter=CHAPTER,
        title="A grid-stride loop: fewer threads than elements",
        signature=(
            "square_grid_stride(x, out): x, out 1-D float32 arrays of equal length n; "
            "out[i] = x[i] * x[i] for every i, whatever n is"
        ),
        launch_text=(
            f"1-D: a fixed grid of {STRIDE_GRID[0]} blocks of {STRIDE_GRID[1]} threads "
            f"({STRIDE_THREADS} threads) for n up to about 4,000 elements, so each thread "
            "handles several elements"
        ),
        output_names=("out",),
        cases=_square_cases,
        hint=_square_hint,
        guard_hint="loop only while i < x.size: `for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):`.",
        race_hint=_square_race_hint,
    )
)


# --- add_bias_2d ------------------------------------------------------------------------------


def _bias_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    # (M, N): wide, tall, square and a single row; none but 16x16 a multiple of the block.
    for m, n in ((20, 33), (35, 6), (16, 16), (1, 40)):
        x, bias = random_inputs(rng, (m, n), n)
        cases.append(
            Case(
                label=f"x {m}x{n}",
                griddim=(blocks_for(n, BLOCK_2D[0]), blocks_for(m, BLOCK_2D[1])),
                blockdim=BLOCK_2D,
                inputs=(x, bias),
                outputs=poisoned((m, n)),
                expected=(x + bias[None, :],),
            )
        )
    return cases


def _bias_hint(case: Case, mismatch: Mismatch) -> str:
    x, bias = case.inputs
    got, expected = mismatch.got, mismatch.expected
    m, n = x.shape
    written = ~np.isnan(got)
    if (written == _reached_with_swapped_indices(case)).all() and _same(
        got[written], expected[written]
    ):
        return (
            "x runs over columns and y over rows, so write `col, row = cuda.grid(2)`; with row "
            "and col swapped the grid misses part of a non-square matrix."
        )
    if m <= n and _same(got, x + bias[:m, None]):
        return "you added bias[row]; the bias has one entry per column: bias[col]."
    if _same(got, x):
        return "you forgot the bias: out[row, col] = x[row, col] + bias[col]."
    if mismatch.unwritten.any():
        return "every (row, col) inside the matrix needs one thread that writes it."
    return "out[row, col] = x[row, col] + bias[col]."


def _bias_error_hint(case: Case, error: KernelError) -> str:
    x, _ = case.inputs
    bounds = out_of_bounds(error)
    if bounds and bounds[1] == 0 and bounds[2] == x.shape[1] and x.shape[1] < x.shape[0]:
        return (
            f"an index ran past {x.shape[1]}, the length of `bias`: the bias has one entry per "
            "column, so read bias[col], not bias[row]."
        )
    return GUARD_HINT_2D if _outside_the_matrix(case, error) else ""


register(
    kernel_exercise(
        id="add_bias_2d",
        chapter=CHAPTER,
        title="Add a bias to every row of a matrix, on a 2-D grid",
        signature=(
            "add_bias_2d(x, bias, out): x, out (M, N) float32; bias (N,) float32; "
            "out[row, col] = x[row, col] + bias[col]"
        ),
        launch_text=LAUNCH_2D,
        output_names=("out",),
        cases=_bias_cases,
        hint=_bias_hint,
        guard_hint=GUARD_HINT_2D,
        error_hint=_bias_error_hint,
        race_hint=_ONE_WRITER_2D,
    )
)


# --- row_sums ---------------------------------------------------------------------------------


def _row_sums_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for m, n in ((200, 7), (37, 50), (1, 3)):  # more rows than columns, then fewer
        (x,) = random_inputs(rng, (m, n), low=0.5, high=1.5)  # positive: no cancellation
        cases.append(
            Case(
                label=f"x {m}x{n}",
                griddim=blocks_for(m, THREADS_1D),
                blockdim=THREADS_1D,
                inputs=(x,),
                outputs=poisoned(m),
                expected=(x.astype(np.float64).sum(axis=1).astype(np.float32),),
                rtol=1e-5,
                atol=1e-6 * n,
            )
        )
    return cases


def _row_sums_hint(case: Case, mismatch: Mismatch) -> str:
    (x,) = case.inputs
    got = mismatch.got
    m, n = x.shape
    if np.isnan(got).all():
        return (
            "every element is still NaN. The checker fills `out` with NaN (GPU memory is not "
            "zeroed either), so `out[row] += ...` keeps NaN. Sum into a local variable "
            "(`total = 0.0`), then write `out[row] = total` once."
        )
    if n > 1 and _same(got, x[:, 1:].sum(axis=1), rtol=1e-4, atol=case.atol):
        return "each sum misses the first column: loop over range(x.shape[1]), starting at 0."
    if n > 1 and _same(got, x[:, :-1].sum(axis=1), rtol=1e-4, atol=case.atol):
        return "each sum misses the last column: loop over range(x.shape[1])."
    if _same(got, x[:, 0]):
        return "out[row] holds only x[row, 0]: add up all x.shape[1] values of the row."
    if 0 < m < n and _same(got, x[:, :m].sum(axis=1), rtol=1e-4, atol=case.atol):
        return (
            f"each sum has {m} terms instead of {n}: you looped over the rows (x.shape[0]); a "
            "row has x.shape[1] values, so loop over range(x.shape[1])."
        )
    return _one_d_hint(mismatch, "out[row] is the sum of x[row, 0], ..., x[row, N-1].")


def _row_sums_error_hint(case: Case, error: KernelError) -> str:
    (x,) = case.inputs
    bounds = out_of_bounds(error)
    if bounds and bounds[1] == 1:
        return (
            f"an index ran past the {x.shape[1]} columns of x: a row has x.shape[1] values, so "
            "loop over range(x.shape[1])."
        )
    return ""


_row_sums_race_hint = _one_writer_per_element(
    "thread `row = cuda.grid(1)` writes out[row] and nothing else."
)


register(
    kernel_exercise(
        id="row_sums",
        chapter=CHAPTER,
        title="Sum each row of a matrix, one thread per row",
        signature=(
            "row_sums(x, out): x (M, N) float32, out (M,) float32; "
            "out[row] = x[row, 0] + ... + x[row, N-1]"
        ),
        launch_text=f"1-D over rows: {THREADS_1D} threads per block, ceil(M / {THREADS_1D}) blocks",
        output_names=("out",),
        cases=_row_sums_cases,
        hint=_row_sums_hint,
        guard_hint="guard the work with `if row < x.shape[0]:` so threads past the last row do nothing.",
        error_hint=_row_sums_error_hint,
        race_hint=_row_sums_race_hint,
    )
)
