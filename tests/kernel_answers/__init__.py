"""A corpus of answers to the kernel exercises of chapters 03-06: for every exercise,
alternative correct kernels that must pass and known-wrong kernels of several kinds, each of which
must fail with the words of its own hint.

Answers are kernel source text, kept in one module per chapter (``ch03`` ... ``ch06``, each with
``ANSWERS = {exercise_id: [Answer, ...]}``). :func:`load` compiles an answer the way a notebook
compiles a cell: the text is in ``linecache`` under a file name that exists nowhere on disk, so
every line the checker quotes has to come from the cell's text it was given, as in JupyterLab.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import answer_corpus
import numpy as np
from numba import cuda, float32, float64, int32, uint32

CORRECT = answer_corpus.CORRECT

#: The kinds of mistake, each with what it means; every wrong answer names one.
KINDS = {
    "exception": "a Python error in the kernel other than a bad index (TypeError, float index)",
    "typo": "a misspelt name (NameError, AttributeError)",
    "signature": "the wrong parameters, or another exercise's kernel",
    "not-a-kernel": "a device function, or code that does not compile for a GPU",
    "guard": "a missing or off-by-one bounds guard",
    "index": "a wrong index: thread index only, swapped x and y, wrong start or step",
    "shared-overrun": "an index past the end of a shared-memory array",
    "partial-mask": "a warp shuffle or vote that only some lanes of the warp reach",
    "race": "a missing barrier, a plain += where an atomic is needed, two writers",
    "barrier": "a syncthreads that only some threads of the block reach",
    "pattern": "a wrong formula: the output follows a recognisable wrong pattern",
    "writes-input": "the kernel changes an input it should only read",
    "writes-nothing": "the kernel writes no output at all",
    "efficiency": "right values, but the trace shows what the exercise is about is missing",
    "numerics": "right on easy inputs, wrong on adversarial ones (overflow, very negative rows)",
}

#: Never in a message to a learner: the checker's own failures and the simulator's internals.
FORBIDDEN = ("Traceback", "checker itself failed", "FakeCUDAModule", "tid=[", "ctaid=[")

WAITING_FOR_CORE = "waiting for checker-core"
WAITING_FOR_RACE = "waiting for warp-race"


@dataclass(frozen=True)
class Answer(answer_corpus.Answer):
    """One answer (see ``answer_corpus.Answer``); ``waiting`` is an xfail reason until a fix
    lands."""

    waiting: str | None = None

    KINDS = KINDS


right, wrong = answer_corpus.constructors(Answer)


#: What a notebook cell of the labs has imported before it defines a kernel.
PRELUDE = {
    "cuda": cuda,
    "float32": float32,
    "float64": float64,
    "int32": int32,
    "uint32": uint32,
    "math": math,
    "np": np,
}


def load(exercise_id: str, answer: Answer, constants: dict | None = None):
    """Compile ``answer`` as a notebook cell and return what its last top-level ``def`` defines
    (a kernel, a device function, or a plain function if it has no decorator)."""
    namespace = {"__name__": "__main__", **PRELUDE, **(constants or {})}
    return answer_corpus.compile_cell("ipykernel_corpus", exercise_id, answer, namespace)
