"""The exercise registry: ids, what each expects, and ``check`` (the contract in COURSE_DESIGN.md)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field

KINDS = ("kernel", "function", "value")


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one attempt. ``message`` says what is wrong and what to try next."""

    passed: bool
    message: str
    exercise_id: str = ""
    attempted: bool = True
    output: str = field(default="", repr=False)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:  # a check cell's last line shows the message, not a dataclass
        return self.message

    def __bool__(self) -> bool:
        return self.passed

    def _repr_html_(self) -> str:
        """JupyterLab's rendering: wrapped at word boundaries, `code` in code style (the plain
        text of ``__repr__`` stays for terminals and for nbval's text/plain comparison)."""
        return to_html(self.message, self.passed)


_CODE = re.compile(r"`([^`\n]+)`")


def to_html(message: str, passed: bool) -> str:
    """A message as HTML: escaped, `code` spans as <code>, "Hint:" in bold, lines kept."""
    lines = []
    for line in message.splitlines():
        text = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", html.escape(line, quote=False))
        if text.startswith("Hint:"):
            text = "<strong>Hint:</strong>" + text[len("Hint:") :]
        lines.append(text)
    colour = "#2e7d32" if passed else "#c77700"
    return (
        f'<div style="border-left: 4px solid {colour}; padding: 0.2em 0.8em; '
        'white-space: normal; overflow-wrap: normal; word-break: normal; max-width: 60em">'
        + "<br>".join(lines)
        + "</div>"
    )


@dataclass(frozen=True)
class Exercise:
    """One lab exercise.

    ``run`` receives the learner's kernel (re-jitted in the checker's process), function or value
    and returns a CheckResult. For kernels, ``signature`` and ``launch`` document exactly how the
    checker calls it.
    """

    id: str
    chapter: str
    title: str
    signature: str
    launch: str
    run: Callable[[object], CheckResult]
    kind: str = "kernel"
    #: Seconds a check may run (None: scaled from ``calibrate`` for kernels, else the default).
    time_limit: float | None = None
    #: Seconds this machine takes for a run of the exercise's launches by a reference (or
    #: do-nothing) kernel; the checker's process calls it once and scales the time limit from it.
    calibrate: Callable[[], float] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"exercise {self.id}: kind must be one of {KINDS}")


_EXERCISES: dict[str, Exercise] = {}


def register(exercise: Exercise) -> Exercise:
    """Add an exercise; ids are unique across the course."""
    if exercise.id in _EXERCISES:
        raise ValueError(f"exercise id {exercise.id!r} is registered twice")
    _EXERCISES[exercise.id] = exercise
    return exercise


def get(exercise_id: str) -> Exercise:
    """The exercise with this id (KeyError naming the known ids otherwise)."""
    try:
        return _EXERCISES[exercise_id]
    except KeyError:
        raise KeyError(_unknown(exercise_id)) from None


def ids(chapter: str | None = None) -> list[str]:
    """All exercise ids, or those of one chapter (e.g. ``"03_first_kernels"``)."""
    return [e.id for e in _EXERCISES.values() if chapter is None or e.chapter == chapter]


def _unknown(exercise_id: str) -> str:
    return f"There is no exercise called {exercise_id!r}. Known exercises: {', '.join(_EXERCISES)}."


def passed(exercise_id: str, detail: str) -> CheckResult:
    return CheckResult(True, f"{exercise_id}: passed. {detail}", exercise_id)


def failed(exercise_id: str, what: str, hint: str = "") -> CheckResult:
    text = f"{exercise_id}: not yet. {what}"
    if hint:
        text += f"\nHint: {hint}"
    return CheckResult(False, text, exercise_id)


def not_attempted(exercise_id: str) -> CheckResult:
    return CheckResult(
        False,
        f"{exercise_id}: not attempted yet. Replace `raise NotImplementedError()` with your code, "
        "run that cell, then run this check again.",
        exercise_id,
        attempted=False,
    )
