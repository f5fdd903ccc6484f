"""Checkers of lab 01: correct answers written differently from the solutions pass; common
mistakes fail with their own hint; a stub is 'not attempted yet'."""

import math

import gpu_utils as gu
from answer_tables import answer_table_tests, returns

check = gu.exercises.check


# Each exercise: correct answers (computed differently from the solutions), then known mistakes.
CORRECT = {
    "weights_70b_bf16": [returns(130.4), lambda: 70e9 * 2 / 1024**3, returns(131)],
    "h100s_for_70b_bf16": [
        returns(2),
        lambda: -(-70e9 * 2 // gu.specs.get("H100-SXM").hbm_bytes),  # ceiling division
    ],
    "stream_7b_bf16_h100_ms": [
        lambda: 14 / 3350 * 1e3,  # GB over GB/s, in ms
        lambda: 7e9 * 16 / 8 / gu.specs.get("H100-SXM").hbm_bandwidth * 1000,
    ],
    "matmul_flops_4096": [lambda: 2 * 4096**3, lambda: 4096 * 4096 * (2 * 4096)],
    "add_bytes_1e8": [returns(1.2e9), lambda: (2 + 1) * 4 * 10**8],
}

MISTAKES = {
    "weights_70b_bf16": [
        (1043, "you counted bits"),
        (260.8, "that is fp32"),
        (65.19, "that is int8"),
        (140, "that is in decimal GB"),
        (133_514, "that is in MiB"),
        (1.4e11, "divide by 2**30"),
        (42, "multiply parameters by bytes per parameter"),
    ],
    "h100s_for_70b_bf16": [
        (1.63, "round the ratio up"),
        (1.75, "not 80e9"),
        (1, "rounding down leaves weights without a GPU: 130 GiB do not fit in 80 GiB"),
        (4, "that is for fp32 weights"),
        (3.26, "a GPU comes whole"),
        (8, "and round up"),
    ],
    "stream_7b_bf16_h100_ms": [
        (33.43, "you counted bits"),
        (8.358, "that is for fp32 weights"),
        (0.004179, "that is in seconds"),
        (4179, "1000x too small"),
        (1.0, "time = bytes / (bytes per second)"),
    ],
    "matmul_flops_4096": [
        (4096**3, "two operations, a multiply and an add"),
        (2 * 4096**2, "each of the n^2 outputs is a dot product"),
        (4096**2, "that counts outputs"),
        (1e9, "n^2 outputs, each a dot product"),
    ],
    "add_bytes_1e8": [
        (8e8, "writing `out` moves bytes too"),
        (4e8, "x and y are read and out is written"),
        (3e8, "that counts elements"),
        (2.4e9, "8 is float64"),
        (1e3, "three arrays"),
    ],
}


(
    test_every_exercise_of_the_chapter_is_tested,
    test_correct_answers_pass,
    test_mistakes_fail_with_their_hint,
    test_a_stub_is_not_attempted_yet,
) = answer_table_tests("01_why_gpus", CORRECT, MISTAKES)


def test_answers_need_to_be_numbers():
    assert "not a number" in check("weights_70b_bf16", returns("130 GiB")).message
    assert "returned nan" in check("weights_70b_bf16", returns(math.nan)).message
