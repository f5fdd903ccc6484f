"""What the three answer corpora share (``kernel_answers``, ``dist_answers``,
``triton_answers``): the answer record and its two constructors, compiling an answer's text the
way a notebook compiles a cell, and the checks every corpus is held to (its shape, and a wrong
answer failing with its own hint)."""

from __future__ import annotations

import ast
import linecache
import textwrap
from dataclasses import dataclass
from typing import ClassVar

CORRECT = "correct"


@dataclass(frozen=True)
class Answer:
    """One answer: ``source`` defines it (the last top-level ``def``, or class where the corpus
    allows one); ``kind`` is CORRECT or a key of the corpus's ``KINDS``; ``hints`` are words the
    message must contain, ``absent`` words it must not (other mistakes' hints). A corpus
    subclasses it with its own ``KINDS`` and fields."""

    name: str
    source: str
    kind: str = CORRECT
    hints: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()

    KINDS: ClassVar[dict[str, str]] = {}

    def __post_init__(self) -> None:
        if self.kind != CORRECT and self.kind not in self.KINDS:
            raise ValueError(f"answer {self.name}: unknown kind {self.kind!r}")
        if self.kind != CORRECT and not self.hints:
            raise ValueError(f"answer {self.name}: a wrong answer asserts its hint")


def constructors(cls: type[Answer]):
    """``right(name, source)`` and ``wrong(name, kind, hints, source, *, absent=(), **fields)``
    for a corpus's Answer class ``cls``."""

    def right(name: str, source: str) -> Answer:
        """A correct answer written differently from the solution: it must pass."""
        return cls(name, source)

    def wrong(name: str, kind: str, hints, source: str, *, absent=(), **fields) -> Answer:
        """A known-wrong answer: it must fail, and its message must contain ``hints``."""
        hints = (hints,) if isinstance(hints, str) else tuple(hints)
        return cls(name, source, kind, hints, tuple(absent), **fields)

    return right, wrong


def compile_cell(
    folder: str, exercise_id: str, answer: Answer, namespace: dict, defines=(ast.FunctionDef,)
):
    """Compile ``answer`` as a notebook cell: its text in ``linecache`` under a file name that
    exists nowhere on disk (so every line a checker quotes comes from the text it was given),
    run in ``namespace``; return what its last top-level definition of ``defines`` defines."""
    text = textwrap.dedent(answer.source).strip("\n") + "\n"
    filename = f"/tmp/{folder}/{exercise_id}__{answer.name}.py"  # never on disk
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)
    names = [node.name for node in ast.parse(text).body if isinstance(node, defines)]
    return namespace[names[-1]]


def assert_corpus_shape(answers: dict) -> None:
    """Every exercise: unique answer names, at least 2 correct answers and at least 6 wrong ones
    of at least 4 kinds."""
    for exercise_id, table in answers.items():
        names = [a.name for a in table]
        assert len(names) == len(set(names)), f"{exercise_id}: answer names repeat"
        mistakes = [a for a in table if a.kind != CORRECT]
        assert sum(a.kind == CORRECT for a in table) >= 2, exercise_id
        assert len(mistakes) >= 6, exercise_id
        assert len({a.kind for a in mistakes}) >= 4, exercise_id


def assert_fails_with_its_own_hint(result, answer: Answer, forbidden) -> None:
    """A wrong answer was checked, failed, and its message has its hint's words, not another
    mistake's, and nothing ``forbidden``."""
    assert not result.passed, result.message
    assert result.attempted, result.message
    for words in answer.hints:
        assert words in result.message, result.message
    for words in (*answer.absent, *forbidden):
        assert words not in result.message, result.message
