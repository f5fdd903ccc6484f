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
import linecache
import textwrap
from dataclasses import dataclass

CORRECT = "correct"

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
class Answer:
    """One answer: ``source`` defines it (the last top-level ``def`` or ``class``); ``kind`` is
    CORRECT or a key of KINDS; ``hints`` are words the message must contain, ``absent`` words it
    must not (other mistakes' hints); ``run_timeout`` shortens the chapter's seconds per run for
    a deadlock; ``worker`` checks through ``gu.exercises.check`` (the checker's own process and
    its time limit) rather than in the test's process."""

    name: str
    source: str
    kind: str = CORRECT
    hints: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    run_timeout: float | None = None
    worker: bool = False

    def __post_init__(self) -> None:
        if self.kind != CORRECT and self.kind not in KINDS:
            raise ValueError(f"answer {self.name}: unknown kind {self.kind!r}")
        if self.kind != CORRECT and not self.hints:
            raise ValueError(f"answer {self.name}: a wrong answer asserts its hint")


def right(name: str, source: str) -> Answer:
    """A correct answer written differently from the solution: it must pass."""
    return Answer(name, source)


def wrong(
    name: str,
    kind: str,
    hints: str | tuple[str, ...],
    source: str,
    *,
    absent: tuple[str, ...] = (),
    run_timeout: float | None = None,
    worker: bool = False,
) -> Answer:
    """A known-wrong answer: it must fail, and its message must contain ``hints``."""
    hints = (hints,) if isinstance(hints, str) else tuple(hints)
    return Answer(name, source, kind, hints, tuple(absent), run_timeout, worker)


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
    text = textwrap.dedent(answer.source).strip("\n") + "\n"
    filename = f"/tmp/ipykernel_corpus/{exercise_id}__{answer.name}.py"  # never on disk
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    exec(compile(PRELUDE, "<prelude>", "exec"), namespace)
    exec(compile(text, filename, "exec"), namespace)
    kinds = (ast.FunctionDef, ast.ClassDef)
    names = [node.name for node in ast.parse(text).body if isinstance(node, kinds)]
    return namespace[names[-1]]
