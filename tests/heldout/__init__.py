"""Held-out answers: wrong and right answers to a lab, written by someone who had not read the
lab's checker (COURSE_DESIGN, "Measure hints on mistakes you did not tune to").

Each lab's file (``lab08b.py``, ``lab10_planner.py``, ``lab11_profile.py``, ``lab12_triton.py``)
holds ``ANSWERS``, a list of ``Blind``. Half of them (``half="tune"``) may be looked at while
hints are changed; the other half (``half="held"``) is run only to report how the checker does on
mistakes it was not tuned to. ``report.py`` runs a file's answers exactly as the lab's check cell
submits them and prints each verdict and message.
"""

from __future__ import annotations

import ast
import linecache
import textwrap
from dataclasses import dataclass

#: "held2": a second held half, written later by other blind writers once "held" had been
#: reported (from then on, "held" may be tuned to like "tune")
HALVES = ("tune", "held", "held2")


@dataclass(frozen=True)
class Blind:
    """One answer, as a learner would write it in the lab.

    ``source`` is one notebook cell, self-contained: it imports what it uses and defines whatever
    earlier lab cells define that the answer needs. ``submit`` names what the lab's check cell
    passes to ``gu.exercises.check`` (by default the cell's last top-level ``def``).
    ``correct``: True for an answer that must pass. ``cause``: for a wrong answer, the real
    mistake in one sentence (what a right hint names). ``hints``: words a right hint contains,
    filled in once the held half has been reported (then the answer is a regression test)."""

    name: str
    exercise_id: str
    half: str
    source: str
    correct: bool
    cause: str = ""
    submit: str = ""
    hints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.half not in HALVES:
            raise ValueError(f"{self.name}: half must be one of {HALVES}")
        if not self.correct and not self.cause:
            raise ValueError(f"{self.name}: a wrong answer says its cause")


def submitted(answer: Blind, namespace: dict | None = None):
    """Run ``answer.source`` as a notebook cell (its text in ``linecache`` under a file name that
    exists nowhere on disk) and return the object its check cell submits."""
    text = textwrap.dedent(answer.source).strip("\n") + "\n"
    filename = f"/tmp/heldout/{answer.exercise_id}__{answer.name}.py"  # never on disk
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"__name__": "__main__"} if namespace is None else namespace
    exec(compile(text, filename, "exec"), namespace)
    if answer.submit:
        return namespace[answer.submit]
    names = [n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
    return namespace[names[-1]]


def leaks(message: str) -> bool:
    """A traceback, a course path or a private name reached the learner's message."""
    return any(
        s in message
        for s in ("Traceback", "gpu_utils/", "/work/", "site-packages", "_worker.py", "._worker")
    )


def verdict(answer: Blind, result) -> str:
    """``ok``, ``FALSE PASS``, ``FALSE REJECTION`` or ``LEAK`` (traceback or path shown)."""
    if leaks(result.message):
        return "LEAK"
    if result.passed and not answer.correct:
        return "FALSE PASS"
    if not result.passed and answer.correct:
        return "FALSE REJECTION"
    return "ok"
