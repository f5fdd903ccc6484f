"""Checkers of lab 13, part 2, the kernels of a decode step (``gpu_utils/exercises/ch13_kernels.py``):
the corpora in tests/kernel_answers/ch13.py (Numba: ``serving_decode_gemv``) and
tests/triton_answers/ch13.py (Triton: ``serving_int8_gemv``): the references and alternative
correct kernels pass, known mistakes fail with their own hint and without the words of the
others', no message shows a traceback or a course path; the lab's own solutions pass; a stub is
not attempted yet; an endless kernel is stopped with its line; the case lists hold sizes 1, 2
and 3, sizes that are not powers of two, partial last blocks and more than one group per row;
and the reference kernels of ``gu.inference_kernels`` agree with NumPy."""

from __future__ import annotations

import time

import numpy as np
import pytest
from answer_corpus import assert_corpus_shape, assert_fails_with_its_own_hint
from kernel_answers import ch13 as numba_corpus

import gpu_utils as gu
from answer_tables import kernel_table_tests, solution_kernel_tests

pytest.importorskip("triton")  # the course's requirements pin it

from triton_answers import CORRECT, FORBIDDEN
from triton_answers import ch13 as triton_corpus
from triton_answers import load as load_triton

#: Never in a message: a course path (the learner's own cells only are quoted).
COURSE_PATHS = ("gpu_utils/", "/tests/", "site-packages")

(
    test_the_gemv_has_its_corpus,
    test_alternative_gemvs_pass,
    test_wrong_gemvs_fail_with_their_own_hint,
) = kernel_table_tests("13_serving", numba_corpus.ANSWERS)
test_the_labs_gemv_passes = solution_kernel_tests("13_serving")


def _triton_params(correct: bool) -> list:
    return [
        pytest.param(exercise_id, answer, id=f"{exercise_id}/{answer.name}")
        for exercise_id, table in triton_corpus.ANSWERS.items()
        for answer in table
        if (answer.kind == CORRECT) == correct
    ]


def test_the_int8_gemv_has_its_corpus():
    assert set(triton_corpus.ANSWERS) == {"serving_int8_gemv", "serving_paged_attention"}
    assert_corpus_shape(triton_corpus.ANSWERS)


@pytest.mark.parametrize("exercise_id, answer", _triton_params(correct=True))
def test_correct_int8_gemvs_pass(exercise_id, answer):
    result = gu.exercises.check(exercise_id, load_triton(exercise_id, answer))
    assert result.passed, result.message
    assert "passed" in result.message


@pytest.mark.parametrize("exercise_id, answer", _triton_params(correct=False))
def test_wrong_int8_gemvs_fail_with_their_own_hint(exercise_id, answer):
    result = gu.exercises.check(exercise_id, load_triton(exercise_id, answer))
    assert_fails_with_its_own_hint(result, answer, FORBIDDEN + COURSE_PATHS)


@pytest.mark.parametrize("exercise_id", ["serving_int8_gemv", "serving_paged_attention"])
def test_the_labs_triton_kernels_pass(exercise_id):
    from answer_tables import _cached_solution_cells

    checked, namespace = _cached_solution_cells(numba_corpus_solutions())
    result = gu.exercises.check(exercise_id, namespace[checked[exercise_id]])
    assert result.passed, result.message


def numba_corpus_solutions():
    from pathlib import Path

    return Path(__file__).resolve().parent.parent / "solutions" / "13_serving_lab.ipynb"


@pytest.mark.parametrize(
    "exercise_id", ["serving_decode_gemv", "serving_int8_gemv", "serving_paged_attention"]
)
def test_a_stub_is_not_attempted_yet(exercise_id):
    from numba import cuda

    triton = pytest.importorskip("triton")
    if exercise_id == "serving_decode_gemv":

        @cuda.jit
        def stub(w, x, y):
            raise NotImplementedError()

    else:

        @triton.jit
        def stub(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP, BLOCK):
            raise NotImplementedError()

    result = gu.exercises.check(exercise_id, stub)
    assert not result.passed and not result.attempted
    assert "not attempted yet" in result.message


ENDLESS_GEMV = numba_corpus.right(
    "endless",
    """
    @cuda.jit
    def decode_gemv(w, x, y):
        t = cuda.threadIdx.x
        acc = float32(0.0)
        j = t
        while j < w.shape[1]:
            acc += w[cuda.blockIdx.x, j] * x[j]
        if t == 0:
            y[cuda.blockIdx.x] = acc
    """,
)
ENDLESS_INT8 = triton_corpus.right(
    "endless",
    """
    @triton.jit
    def int8_gemv_kernel(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        start = 0
        while start < n_cols:
            cols = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0)
        tl.store(y_ptr + row, tl.sum(acc, axis=0))
    """,
)


@pytest.mark.parametrize("which", ["numba", "triton"])
def test_an_endless_kernel_is_stopped_with_its_line(which):
    from kernel_answers import load as load_numba

    if which == "numba":
        exercise_id, kernel = "serving_decode_gemv", load_numba("serving_decode_gemv", ENDLESS_GEMV)
        line = "while j < w.shape[1]:"
    else:
        exercise_id, kernel = "serving_int8_gemv", load_triton("serving_int8_gemv", ENDLESS_INT8)
        line = "while start < n_cols:"
    # the watchdog stops the loop wherever it is: its `while` line or a line of its body
    body = {"numba": ENDLESS_GEMV, "triton": ENDLESS_INT8}[which].source
    loop = body[body.index(line) :].splitlines()[:3]
    start = time.monotonic()
    result = gu.exercises.check(exercise_id, kernel)
    seconds = time.monotonic() - start
    assert not result.passed and result.attempted, result.message
    assert any(text.strip() in result.message for text in loop), result.message
    assert "Traceback" not in result.message
    assert seconds < 60, seconds  # 20 s of processor time; the clock runs slower on a busy CI


def test_the_case_lists_have_small_odd_and_partial_sizes():
    from gpu_utils.exercises import ch13_kernels as ck

    rng = np.random.default_rng(0)
    gemv = ck._gemv_cases(rng)
    dims = {d for case in gemv for d in case.inputs[0].shape}
    assert {1, 2, 3, 33, 100} <= dims
    assert any(
        case.inputs[0].shape[1] % ck.THREADS and case.inputs[0].shape[1] > ck.THREADS
        for case in gemv
    )
    for case in gemv:  # outputs poisoned, inputs never all zeros
        assert np.isnan(case.outputs[0]).all() and case.inputs[0].any()
    int8 = ck._int8_cases(rng)
    sizes = {d for case in int8 for d in (case.grid[0], case.args["n_cols"])}
    assert {1, 2, 3} <= sizes and any(d & (d - 1) for d in sizes)
    groups = {case.constexprs["GROUP"] for case in int8}
    assert 128 in groups and len(groups) >= 4 and any(g & (g - 1) for g in groups)
    assert any(c.args["n_cols"] % c.constexprs["BLOCK"] for c in int8)  # a partial last block
    assert any(c.constexprs["BLOCK"] > c.constexprs["GROUP"] for c in int8)
    assert any(c.constexprs["BLOCK"] < c.constexprs["GROUP"] for c in int8)
    again = ck._int8_cases(np.random.default_rng(1))
    assert not np.array_equal(int8[1].extra["q"], again[1].extra["q"])
    paged = ck._paged_cases(rng)
    lengths = [int(n) for case in paged for n in case.extra["lens"]]
    assert {1, 2, 3} <= set(lengths) and {1, 2} <= {len(c.extra["lens"]) for c in paged}
    assert any(c.args["D"] & (c.args["D"] - 1) for c in paged)  # D not a power of two
    for case in paged:
        table, lens, size = case.extra["table"], case.extra["lens"], case.constexprs["BLOCK_SIZE"]
        blocks = [table[s, : -(-int(n) // size)] for s, n in enumerate(lens)]
        used = np.concatenate(blocks)
        assert len(set(used.tolist())) == used.size and (table == -1).any()  # own blocks, -1 past
    assert any(  # a table that is not simply 0, 1, 2, ...: the interleaved growth scattered it
        (np.diff(b) != 1).any() for c in paged for b in c.extra["table"] if (b >= 0).sum() > 1
    )
    assert any(int(n) % c.constexprs["BLOCK_SIZE"] for c in paged for n in c.extra["lens"])


def test_the_reference_kernels_agree_with_numpy():
    import torch

    ik = gu.inference_kernels
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (5, 70)).astype(np.float32)
    x = rng.uniform(-1, 1, 70).astype(np.float32)
    y = np.full(5, np.nan, np.float32)
    ik.decode_gemv()[5, ik.GEMV_THREADS](w, x, y)
    np.testing.assert_allclose(y, w.astype(np.float64) @ x, rtol=1e-5, atol=1e-5)
    q, scales = gu.inference.quantize(w[:, :64], bits=8, group=16)
    out = torch.full((5,), float("nan"))
    ik.int8_gemv()[(5,)](
        torch.from_numpy(q),
        torch.from_numpy(scales),
        torch.from_numpy(x[:64]),
        out,
        64,
        GROUP=16,
        BLOCK=32,
    )
    expected = gu.inference.dequantize(q, scales).astype(np.float64) @ x[:64]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    assert ik.gemv_bytes(8192, 8192) == 8192 * 8192 * 4 + 4 * (8192 + 8192)
    from gpu_utils.exercises import ch13_kernels as ck

    case = ck._paged_case(rng, (9, 4), 4, 6)
    args = {k: v.clone() if hasattr(v, "clone") else v for k, v in case.args.items()}
    ik.paged_decode_attention()[case.grid](*args.values(), **case.constexprs)
    x = case.extra
    for s, n in enumerate(x["lens"]):  # dense attention over the gathered rows, written here
        rows = [x["table"][s, i // 4] * 4 + i % 4 for i in range(int(n))]
        keys = x["k"].reshape(-1, 6)[rows].astype(np.float64)
        weights = np.exp(x["scale"] * keys @ x["q"][s])
        want = weights @ x["v"].reshape(-1, 6)[rows] / weights.sum()
        np.testing.assert_allclose(args["out_ptr"][s].numpy(), want, rtol=1e-5, atol=1e-6)


def test_no_speed_is_stated_on_the_simulator():
    ik = gu.inference_kernels
    with pytest.raises(RuntimeError, match="simulator"):
        ik.copy_ceiling()
    with pytest.raises(RuntimeError, match="GPU"):
        ik.time_decode_gemv(ik.decode_gemv())


def test_make_gpu_check_times_both_gemvs_against_the_copy_ceiling():
    """benchmarks/kernels_ch13.py registers the two reference GEMVs (tests/test_benchmark_kernels
    runs them tiny on the simulator); their bytes per weight give the int8 speed-up bound."""
    import kernels  # benchmarks/kernels.py, on the path through pyproject.toml

    found = {b.name: b for b in kernels.discover(tiny=False) if b.name.endswith("gemv")}
    assert set(found) == {"decode_gemv", "int8_gemv"}
    assert all(b.ceiling == "copy" and b.target is None for b in found.values())
    per_weight = {
        name: b.bytes / (b.flops / 2) for name, b in found.items()
    }  # bytes per weight, x and y included
    bound = gu.inference.weight_only_speedup_bound(8, group=128, scale_bytes=4, base_bytes=4)
    assert per_weight["decode_gemv"] / per_weight["int8_gemv"] == pytest.approx(bound, rel=1e-3)
