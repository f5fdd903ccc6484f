"""Exercises of lab 03, first kernels (chapter 03): one thread per element, 2-D grids, atomics."""

from __future__ import annotations

import re

import numpy as np

from ._kernels import (
    GUARD_HINT_2D,
    Case,
    Mismatch,
    blocks_for,
    kernel_exercise,
    poisoned,
    random_inputs,
)
from ._registry import register

CHAPTER = "03_first_kernels"
THREADS_1D = 128  # four warps per block: enough to keep an SM busy, small enough for the simulator
BLOCK_2D = (16, 16)  # 256 threads; x (columns) first, as cuda.grid(2) returns (x, y)

_INDEX_HINT = (
    "compute the global index with `i = cuda.grid(1)` (that is blockIdx.x * blockDim.x + "
    "threadIdx.x); threadIdx.x alone repeats 0..127 in every block."
)


def _only_first_block_wrote(mismatch: Mismatch, block: int) -> bool:
    written = ~np.isnan(mismatch.got.ravel())
    return mismatch.got.size > block and written[:block].all() and not written[block:].any()


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
    got = mismatch.got
    for formula, wrong, hint in (
        ("a - b", a - b, "add the two inputs: out[i] = a[i] + b[i]."),
        ("a * b", a * b, "add the two inputs: out[i] = a[i] + b[i]."),
        ("a + a", a + a, "you used `a` twice: the second operand is b[i]."),
        ("b + b", b + b, "you used `b` twice: the first operand is a[i]."),
    ):
        if np.allclose(got, wrong, equal_nan=False):
            return f"your output equals {formula}; {hint}"
    if _only_first_block_wrote(mismatch, THREADS_1D):
        return "only the first block's elements were written: " + _INDEX_HINT
    if mismatch.unwritten.any() and mismatch.unwritten[-1] and mismatch.unwritten.sum() == 1:
        return (
            "only the last element is missing: the guard is one short. Use `if i < out.size:` "
            "(not `i < out.size - 1`)."
        )
    if mismatch.unwritten.any():
        return "every element needs exactly one thread that writes it: " + _INDEX_HINT
    return "each thread i should compute out[i] = a[i] + b[i] for its own i."


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


def _written_by_swapped_indices(case: Case) -> np.ndarray:
    """Which elements a kernel with `row, col = cuda.grid(2)` (x and y swapped) writes."""
    m, n = case.expected[0].shape
    gx, gy = case.griddim
    rows = np.arange(m)[:, None] < gx * BLOCK_2D[0]
    cols = np.arange(n)[None, :] < gy * BLOCK_2D[1]
    return rows & cols


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
    swapped = _written_by_swapped_indices(case)
    if (written == swapped).all() and np.allclose(got[written], expected[written], rtol=1e-4):
        return (
            "x runs over columns and y over rows, so write `col, row = cuda.grid(2)`; you have "
            "row and col swapped, which leaves part of a non-square output unwritten."
        )
    if k == n and np.allclose(got, a @ b.T, rtol=1e-4, atol=case.atol):
        return "you used b[col, k]; column `col` of b is b[k, col]."
    for terms in sorted({m, n} - {k}):
        if 0 < terms < k and np.allclose(got, a[:, :terms] @ b[:terms, :], rtol=1e-4):
            return (
                f"each element sums {terms} products instead of {k}: the inner loop must run over "
                "the shared dimension, `for k in range(a.shape[1])`."
            )
    if mismatch.unwritten.any():
        return "launch covers the whole output; every (row, col) inside it must be written once."
    return "out[row, col] is the dot product of row `row` of a and column `col` of b."


def _matmul_error_hint(case: Case, error: str) -> str:
    a, b = case.inputs
    m, k = a.shape
    size = re.search(r"size there is (\d+)", error)
    if size and int(size.group(1)) == k and k not in (m, b.shape[1]):
        return (
            f"an index ran past K = {k}: the inner loop must run over the shared dimension, "
            "`for k in range(a.shape[1])`."
        )
    return GUARD_HINT_2D


register(
    kernel_exercise(
        id="matmul_naive",
        chapter=CHAPTER,
        title="Matrix product, one thread per output element",
        signature=(
            "matmul_naive(a, b, out): a (M, K), b (K, N), out (M, N), float32; "
            "out[row, col] = sum over k of a[row, k] * b[k, col]"
        ),
        launch_text=(
            f"2-D: blocks of {BLOCK_2D[0]}x{BLOCK_2D[1]} threads, grid (ceil(N/16), ceil(M/16)); "
            "x covers columns and y rows, so `col, row = cuda.grid(2)`"
        ),
        output_names=("out",),
        cases=_matmul_cases,
        hint=_matmul_hint,
        guard_hint=GUARD_HINT_2D,
        error_hint=_matmul_error_hint,
    )
)


# --- sum_atomic -------------------------------------------------------------------------------


def _sum_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for n in (1, 200, 1000):
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
    )
)
