"""Global-memory traffic and FLOPs of one attention head, unfused and fused (chapter 05,
section 5.4).

Attention (Vaswani et al. 2017, section 3.2.1): O = softmax(Q K^T / sqrt(d)) V, with Q, K, V and
O of n rows and d columns, elements of ``itemsize`` bytes. Counts are elements moved between
global memory and the chip, each counted once per time a kernel reads or writes it:

* unfused (FlashAttention, Dao et al. 2022, arXiv 2205.14135, Algorithm 0): Q, K, V read and O
  written once (at best), and the n x n scores S and probabilities P through global memory. With
  the online softmax (Milakov and Gimelshein 2018, arXiv 1805.02867) S is written once and read
  twice, P written once and read once: 4 n d + 5 n^2 elements.
* fused (FlashAttention, Algorithm 1): Q read and O written once; K and V read once per block of
  ``block_queries`` queries: 2 n d + 2 n d ceil(n / block_queries) elements.

FlashAttention's Theorem 2 (section 3.2) gives the same orders in general: Theta(n d + n^2)
accesses for standard attention, Theta(n^2 d^2 / M) for FlashAttention with an on-chip memory of
M elements (its query block grows with M). FLOPs count the two products, 2 n^2 d each; the
softmax's few operations per score are left out.
"""

from __future__ import annotations

import math


def flops(n: int, d: int) -> int:
    """FLOPs of Q K^T and P V for one head: 4 n^2 d."""
    return 4 * n * n * d


def unfused_bytes(n: int, d: int, itemsize: int = 4) -> int:
    """Global traffic of the three-kernel version (scores, online softmax, P V), in bytes."""
    return itemsize * (4 * n * d + 5 * n * n)


def fused_bytes(n: int, d: int, block_queries: int, itemsize: int = 4) -> int:
    """Global traffic of the fused kernel with ``block_queries`` queries per block, in bytes
    (``block_queries = n``: K and V read once, as when a cache holds them)."""
    if block_queries < 1:
        raise ValueError(f"block_queries must be at least 1, not {block_queries}")
    return itemsize * (2 * n * d + 2 * n * d * math.ceil(n / block_queries))


def intensity(n: int, d: int, nbytes: int) -> float:
    """FLOP per byte of global traffic."""
    return flops(n, d) / nbytes
