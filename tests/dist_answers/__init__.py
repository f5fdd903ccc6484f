"""A corpus of answers to the code exercises of labs 09-11 (data parallelism, model parallelism,
the capstone): for every exercise, alternative correct answers that must pass and known-wrong
answers of several kinds, each of which must fail with the words of its own hint and without
the words of other mistakes' hints.

Answers are source text, one module per lab (``ch09``, ``ch10``, ``ch11``, each with
``ANSWERS = {exercise_id: [Answer, ...]}``). :func:`load` compiles an answer the way a notebook
compiles a cell: the text is in ``linecache`` under a file name that exists nowhere on disk, and
the code's module is ``__main__``, so it travels to the ranks by value, as a notebook's does.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import answer_corpus

CORRECT = answer_corpus.CORRECT

#: The kinds of mistake, each with what it means; every wrong answer names one.
KINDS = {
    "exception": "a Python error in the answer (TypeError, a shape that cannot multiply)",
    "signature": "the wrong parameters, or something that is not a function or class",
    "reduction": "a collective that sums where a mean is needed, or divides twice",
    "rank-dependent": "code that runs differently on some ranks (only rank 0 divides)",
    "wrong-tensor": "a collective or an update applied to the wrong tensor (a copy, p.data)",
    "tied-frozen": "the tied weight counted twice, or the frozen parameter given a gradient",
    "sharding": "shards cut wrongly, never shared, or not kept (the state is not sharded)",
    "deadlock": "a collective that only some ranks call",
    "loop": "a loop that never ends, on one rank or on all",
    "math": "a wrong formula: a missing transpose, bias or shift, a wrong scale",
    "state": "state carried between calls: old gradients, a fixed seed or learning rate",
    "graph": "a result detached from autograd, or parameters that get no gradient",
    "efficiency": "right values without what the exercise is about (no fusion, host syncs)",
    "schedule": "a pipeline schedule that breaks a rule or wastes time",
}

#: Never in a message to a learner: tracebacks, the checker's own failures, its private names,
#: and the lines gloo and torch.distributed log in the ranks.
FORBIDDEN = (
    "Traceback",
    "checker itself failed",
    "_train_rank",
    "_layer_rank",
    "_mlp_rank",
    "_all_agree",
    "_call_fn",
    "[Gloo]",
    "connected to",
    "[c10d]",
    "c10d::",
    "is deprecated, use torch.distributed",
)


@dataclass(frozen=True)
class Answer(answer_corpus.Answer):
    """One answer (see ``answer_corpus.Answer``; a class is allowed as the last definition);
    ``run_timeout`` shortens the chapter's seconds per run for a deadlock; ``worker`` checks
    through ``gu.exercises.check`` (the checker's own process and its time limit) rather than in
    the test's process."""

    run_timeout: float | None = None
    worker: bool = False

    KINDS = KINDS


right, wrong = answer_corpus.constructors(Answer)


#: What a lab's first cells import before its answers are written.
PRELUDE = (
    "import torch\n"
    "import torch.distributed as dist\n"
    "import torch.nn.functional as F\n"
    "import numpy as np\n"
    "import gpu_utils as gu\n"
)


def load(exercise_id: str, answer: Answer):
    """Compile ``answer`` as a notebook cell; return its last top-level function or class."""
    namespace = {"__name__": "__main__"}
    exec(compile(PRELUDE, "<prelude>", "exec"), namespace)
    defines = (ast.FunctionDef, ast.ClassDef)
    return answer_corpus.compile_cell("ipykernel_corpus", exercise_id, answer, namespace, defines)
