"""A corpus of answers to lab 12's Triton exercises: for every exercise, alternative correct
kernels that must pass and known-wrong kernels of several kinds, each of which must fail with the
words of its own hint and without the words of the others'.

Answers are kernel source text (``ch12.ANSWERS``). :func:`load` compiles an answer the way a
notebook compiles a cell: the text is in ``linecache`` under a file name that exists nowhere on
disk, so every line the checker quotes comes from the cell's text it was given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import answer_corpus

from gpu_utils.exercises._triton import triton_module

CORRECT = answer_corpus.CORRECT

#: The kinds of mistake, each with what it means; every wrong answer names one.
KINDS = {
    "mask": "a missing or wrong mask: an access outside a tensor, or padding lanes that count",
    "pointer": "wrong pointer arithmetic: a row stride assumed, swapped strides, a wrong offset",
    "numerics": "right on easy inputs, wrong on adversarial ones (max from 0, no max, fp16 sums)",
    "block": "a block shape that is not a power of two",
    "formula": "a wrong formula: missing scale, off-by-one causal mask, unbiased variance, ...",
    "typo": "a misspelt name",
    "writes-input": "the kernel changes an input it should only read",
    "writes-nothing": "the kernel stores nothing",
    "compile": "runs in the interpreter, but Triton's compiler rejects it for a GPU",
    "signature": "the wrong parameters",
}

#: Never in a message to a learner: tracebacks, the checker's own failures, Triton's internals.
FORBIDDEN = (
    "Traceback",
    "checker itself failed",
    "site-packages",
    "InterpreterError",
    "TensorHandle",
    "interpreter_builder",
)


@dataclass(frozen=True)
class Answer(answer_corpus.Answer):
    """One answer (see ``answer_corpus.Answer``)."""

    KINDS = KINDS


right, wrong = answer_corpus.constructors(Answer)


def edit(source: str, *replacements: tuple[str, str]) -> str:
    """``source`` with each (old, new) replaced; every old text must be there."""
    for old, new in replacements:
        if old not in source:
            raise ValueError(f"{old!r} is not in the source")
        source = source.replace(old, new)
    return source


def load(exercise_id: str, answer: Answer):
    """Compile ``answer`` as a notebook cell and return what its last top-level ``def`` defines."""
    triton = triton_module()
    import triton.language as tl

    namespace = {"__name__": "__main__", "triton": triton, "tl": tl, "math": math}
    return answer_corpus.compile_cell("ipykernel_triton_corpus", exercise_id, answer, namespace)
