"""Checkers of lab 06: the corpus in tests/kernel_answers/ch06.py (correct kernels written
differently from the solutions pass; known mistakes fail with their own hint, races and extra
global traffic found by the trace), the lab's own solutions pass, and the two non-kernel
exercises (tiled traffic, bf16 rounding)."""

import numpy as np
import pytest
import torch
from kernel_answers import ch06

import gpu_utils as gu
from answer_tables import kernel_table_tests, solution_kernel_tests

check = gu.exercises.check

(
    test_every_kernel_exercise_has_its_corpus,
    test_alternative_correct_answers_pass,
    test_wrong_answers_fail_with_their_own_hint,
) = kernel_table_tests("06_matmul", ch06.ANSWERS, ch06.CONSTANTS)
test_the_labs_solution_passes = solution_kernel_tests("06_matmul")


# --- matmul_tiled_traffic ----------------------------------------------------------------------


def test_traffic_accepts_the_formula_and_explains_mistakes():
    n, tile = 4096, 32
    assert check("matmul_tiled_traffic", lambda: 2 * n**3 * 4 / tile / 1e9).passed
    for value, hint in (
        (2 * n**3 * 4 / 1e9, "naive kernel's traffic"),
        (2 * n**3 * 4 / tile**2 / 1e9, "not 32x32 times"),
        (2 * n**2 * 4 / 1e9, "that is the ideal"),
        (2 * n**3 * 4 / tile, "not bytes"),
    ):
        result = check("matmul_tiled_traffic", lambda value=value: value)
        assert not result.passed and hint in result.message, result.message


def test_traffic_answer_agrees_with_the_cost_model():
    loads = gu.matmul.global_loads("tiled", 4096, 4096, 4096, 32)
    assert check("matmul_tiled_traffic", lambda: 4 * loads / 1e9).passed


# --- round_to_bf16 -------------------------------------------------------------------------------


def bf16_with_torch(x):  # correct, and nothing like the bit-level solution
    return torch.from_numpy(x).to(torch.bfloat16).float().numpy()


def bf16_with_integer_arithmetic(x):  # correct: round half to even on the upper 16 bits
    bits = x.view(np.uint32).astype(np.uint64)
    upper, lower = bits >> 16, bits & 0xFFFF
    round_up = (lower > 0x8000) | ((lower == 0x8000) & (upper & 1 == 1))
    return ((upper + round_up) << 16).astype(np.uint32).view(np.float32)


def bf16_truncates(x):
    return (x.view(np.uint32) & 0xFFFF0000).view(np.float32)


def bf16_rounds_half_up(x):
    return ((x.view(np.uint32) + 0x8000) & 0xFFFF0000).view(np.float32)


def bf16_is_fp16(x):
    return x.astype(np.float16).astype(np.float32)


def bf16_stub(x):
    raise NotImplementedError()


@pytest.mark.parametrize("function", [bf16_with_torch, bf16_with_integer_arithmetic])
def test_round_to_bf16_accepts_correct_functions(function):
    result = check("round_to_bf16", function)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "function, hint",
    [
        (bf16_truncates, "you truncated"),
        (bf16_rounds_half_up, "ties must round to even"),
        (bf16_is_fp16, "that is fp16"),
        (lambda x: x[:10], "returned shape (10,)"),
        (lambda x: None, "returned None"),
    ],
    ids=["truncates", "half-up", "fp16", "wrong-shape", "returns-none"],
)
def test_round_to_bf16_rejects_mistakes_with_their_hint(function, hint):
    result = check("round_to_bf16", function)
    assert not result.passed and hint in result.message, result.message


def test_round_to_bf16_stub_is_not_attempted():
    result = check("round_to_bf16", bf16_stub)
    assert not result.attempted and "not attempted yet" in result.message


def test_lab_06_exercises_are_registered_in_order():
    assert gu.exercises.ids("06_matmul") == [
        "matmul_tiled",
        "matmul_register_tiled",
        "matvec_warp",
        "matmul_tiled_traffic",
        "round_to_bf16",
    ]
