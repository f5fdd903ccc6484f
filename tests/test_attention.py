"""The attention cost model of chapter 05 (gu.attention) against counts done by hand and against
the orders of FlashAttention's Theorem 2."""

import pytest

import gpu_utils as gu


def test_counts_for_a_small_head_by_hand():
    # n = 4, d = 2, float32: Q, K, V, O 8 elements each; S and P 16 each
    assert gu.attention.flops(4, 2) == 2 * (4 * 4 * 2) * 2
    assert gu.attention.unfused_bytes(4, 2) == 4 * (4 * 8 + 5 * 16)
    assert gu.attention.fused_bytes(4, 2, block_queries=4) == 4 * (2 * 8 + 2 * 8)
    assert gu.attention.fused_bytes(4, 2, block_queries=1) == 4 * (2 * 8 + 2 * 8 * 4)
    assert gu.attention.fused_bytes(5, 2, block_queries=4) == 4 * (2 * 10 + 2 * 10 * 2)


def test_orders_of_theorem_2():
    # unfused grows as n^2 (for n >> d); fused with a fixed query block as n^2 d / B
    n, d = 4096, 128
    ratio = gu.attention.unfused_bytes(2 * n, d) / gu.attention.unfused_bytes(n, d)
    assert 3.9 < ratio <= 4.0
    fused = gu.attention.fused_bytes(n, d, 128)
    assert fused < gu.attention.unfused_bytes(n, d)
    assert gu.attention.fused_bytes(n, d, 256) < fused  # a larger on-chip block: fewer bytes


def test_intensity_and_bad_block():
    n, d = 4096, 128
    once = gu.attention.fused_bytes(n, d, n, itemsize=2)
    assert gu.attention.intensity(n, d, once) == pytest.approx(4 * n * n * d / (8 * n * d))
    with pytest.raises(ValueError, match="at least 1"):
        gu.attention.fused_bytes(n, d, 0)
