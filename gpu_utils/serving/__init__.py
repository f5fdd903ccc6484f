"""Serving models, chapter 13: the decode step's bounds, the KV cache and batching
(:mod:`.inference`), and the decode step's reference kernels (:mod:`.inference_kernels`, with
their Triton variants in :mod:`._inference_triton`). Notebooks reach each as ``gu.<module>``.
"""
