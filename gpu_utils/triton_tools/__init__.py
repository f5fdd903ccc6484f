"""Triton, chapter 12: which program touched which element (:mod:`.triton_accesses`), what the
compiler made of a kernel without a GPU (:mod:`.triton_ir`) and the backward kernels
(:mod:`.triton_backward`). Notebooks reach each as ``gu.<module>``.
"""
