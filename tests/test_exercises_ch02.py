"""Checkers of lab 02: correct answers written differently from the solutions pass; common
mistakes fail with their own hint; a stub is 'not attempted yet'."""

import pytest

import gpu_utils as gu
from answer_tables import answer_table_tests, returns
from gpu_utils.facts.specs import A100_DEVICE_QUERY

check = gu.exercises.check


CORRECT = {
    "occupancy_h100_256x64": [
        returns(0.5),
        lambda: (16384 // (64 * 32) * 4 // 8) * 8 / 64,  # warps per sub-partition x 4, in blocks
    ],
    "occupancy_a100_41kb": [
        returns(0.1875),
        lambda: (164 // (41 + 1)) * (128 // 32) / 64,
    ],
    "limiter_32_threads": [returns("blocks"), returns("Blocks per SM"), returns(" block ")],
    "device_query_bandwidth": [
        returns(2039),
        lambda: 1593e6 * 2 * 5120 / 8 / 1e9,
        lambda: (
            A100_DEVICE_QUERY["memory_clock_rate_khz"]
            * 1000
            * A100_DEVICE_QUERY["global_memory_bus_width_bits"]
            / 4
            / 1e9
        ),
    ],
    "device_query_resident_threads": [
        returns(221_184),
        lambda: A100_DEVICE_QUERY["multiprocessor_count"] * 64 * 32,  # 64 warps of 32 per SM
    ],
}

MISTAKES = {
    "occupancy_h100_256x64": [
        (1.0, "registers limit this kernel"),
        (50, "not a percentage"),
        (4, "that is blocks per SM"),
        (32, "that is the number of active warps"),
        (0.3, "take the smallest"),
    ],
    "occupancy_a100_41kb": [
        (0.25, "reserves 1 KB of shared memory per block"),
        (1.0, "shared memory limits this kernel"),
        (0.3125, "228 KB is an H100's shared memory per SM"),
        (3, "that is blocks per SM"),
        (18.75, "not a percentage"),
    ],
    "limiter_32_threads": [
        ("warps", "64 warp slots hold 64 of them"),
        ("registers", "65,536 registers hold 64 such warps"),
        ("shared memory", "only the 1 KB reserve per block counts"),
        ("threads", "return one of 'warps', 'registers', 'shared memory', 'blocks'"),
        (3, "return one of"),
    ],
    "device_query_bandwidth": [
        (1019.5, "double data rate"),
        (16312, "divide by 8 for bytes"),
        (2.039, "1000x too small"),
        (2.039e12, "divide by 1e9 for GB/s"),
        (900, "2 (double data rate) x clock in Hz x bus width in bytes"),
    ],
    "device_query_resident_threads": [
        (110_592, "1,024 is the limit per block"),
        (2048, "that is one SM"),
        (6912, "that counts warps"),
        (3456, "the most resident blocks"),
        (1e6, "SMs x the most threads"),
    ],
}


(
    test_every_exercise_of_the_chapter_is_tested,
    test_correct_answers_pass,
    test_mistakes_fail_with_their_hint,
    test_a_stub_is_not_attempted_yet,
) = answer_table_tests("02_gpu_architecture", CORRECT, MISTAKES)


def test_limiter_answers_that_raise_or_are_not_functions_get_a_hint():
    assert "wrap it as" in check("limiter_32_threads", "blocks").message
    assert "ZeroDivisionError" in check("limiter_32_threads", lambda: 1 / 0).message


def test_the_device_query_matches_the_published_figures():
    # The memory clock and bus width give the A100 80GB datasheet's 2,039 GB/s (gu.specs).
    query = A100_DEVICE_QUERY
    peak = 2 * query["memory_clock_rate_khz"] * 1e3 * query["global_memory_bus_width_bits"] / 8
    spec = gu.specs.get("A100-SXM4-80GB")
    assert peak == pytest.approx(spec.hbm_bandwidth, rel=1e-3)
    assert query["multiprocessor_count"] == spec.sm_count
    assert query["l2_cache_size_bytes"] == spec.l2_bytes
    assert query["max_shared_memory_per_multiprocessor"] == spec.smem_per_sm_bytes
    sm = gu.occupancy.limits(query["compute_capability"])
    assert query["max_threads_per_multiprocessor"] == sm.max_threads_per_sm
    assert query["max_registers_per_multiprocessor"] == sm.registers_per_sm
