"""Progress for self-paced learners (chapter 00, "How labs work"): ``gu.progress()``.

Every exercise a learner passes is recorded, when ``gu.exercises.check`` passes, in a small JSON
file on the learner's machine: ``~/.gpu-course/progress.json``, or the file named by the
environment variable ``GPU_COURSE_PROGRESS``, never inside the course's repository (a path there
falls back to the default). Recording never breaks a check: a corrupt file is set aside and a new
one started, an unwritable one is skipped. ``gu.progress()`` shows passed exercises per chapter;
it also says how old the record is (its first and latest pass), so that passes made by
another run on the machine stand out; ``gu.progress(reset=True)`` asks before deleting anything.
Maintainer tools that run the checkers (``make test``, ``make execute``) record into a scratch file
through ``GPU_COURSE_PROGRESS``, never into the learner's. Instructors collect these files and
summarise a class with ``python -m gpu_utils summary`` (see ``gpu_utils.authoring.workshop``).
"""

from __future__ import annotations

import datetime
import html
import sys
import types
from pathlib import Path

from ._progress_file import ENV, FORMAT, REPOSITORY, default_path, load, path, record

__all__ = [
    "ENV",
    "FORMAT",
    "REPOSITORY",
    "Progress",
    "default_path",
    "load",
    "path",
    "progress",
    "record",
    "summary",
]


class Progress:
    """Passed exercises per chapter; shows as a table in a notebook and as text elsewhere."""

    def __init__(
        self,
        rows: list[tuple[str, int, int, list[str]]],
        where: Path,
        first: datetime.datetime | None = None,
        last: datetime.datetime | None = None,
        now: datetime.datetime | None = None,
    ):
        self.rows, self.where = rows, where
        self.first, self.last = first, last  # the record's first and latest pass (UTC)
        self.now = now or datetime.datetime.now(datetime.timezone.utc)

    @property
    def age(self) -> str:
        """How old the record is, in words: when its first pass and its latest were recorded.
        Passes you do not remember making came from another run on this machine (reset them
        with ``gu.progress(reset=True)``)."""
        if self.first is None or self.last is None:
            return "no passes recorded yet"
        return (
            f"record started {self.first:%Y-%m-%d} ({_ago(self.now - self.first)}), "
            f"latest pass {_ago(self.now - self.last)}"
        )

    @property
    def passed(self) -> int:
        return sum(row[1] for row in self.rows)

    @property
    def total(self) -> int:
        return sum(row[2] for row in self.rows)

    def __repr__(self) -> str:
        lines = [
            f"Progress ({self.where}): {self.passed} of {self.total} exercises passed; {self.age}"
        ]
        for chapter, done, total, missing in self.rows:
            todo = f"; to do: {', '.join(missing)}" if missing else ""
            lines.append(f"  chapter {chapter}: {done}/{total}{todo}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<tr><td>{html.escape(c)}</td><td>{d}/{t}</td>"
            f"<td><progress value='{d}' max='{t}'></progress></td>"
            f"<td>{html.escape(', '.join(m)) or 'all passed'}</td></tr>"
            for c, d, t, m in self.rows
        )
        return (
            f"<p>{self.passed} of {self.total} exercises passed; {html.escape(self.age)} "
            f"(<code>{html.escape(str(self.where))}</code>)</p><table><tr><th>chapter</th>"
            f"<th>passed</th><th></th><th>to do</th></tr>{cells}</table>"
        )


def _ago(delta: datetime.timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "just now"


def _when(text: object) -> datetime.datetime | None:
    try:
        found = datetime.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=datetime.timezone.utc)


def summary(where: Path | None = None, now: datetime.datetime | None = None) -> Progress:
    """Per chapter: passed, total, and the exercises still to do."""
    from .exercises import get, ids
    from .exercises._registry import INDEX  # chapters by id, without loading their checkers

    where = where or path()
    passed = load(where)["passed"]
    chapters: dict[str, list[str]] = {}
    for exercise_id in ids():
        chapter = INDEX[exercise_id][1] if exercise_id in INDEX else get(exercise_id).chapter
        chapters.setdefault(chapter, []).append(exercise_id)
    rows = []
    for chapter, exercises in sorted(chapters.items()):
        missing = [e for e in exercises if e not in passed]
        rows.append((chapter, len(exercises) - len(missing), len(exercises), missing))
    entries = [e for e in passed.values() if isinstance(e, dict)]
    firsts = [t for t in (_when(e.get("first")) for e in entries) if t]
    lasts = [t for t in (_when(e.get("last")) for e in entries) if t]
    return Progress(rows, where, min(firsts, default=None), max(lasts, default=None), now)


def progress(reset: bool = False, *, ask=input) -> Progress | None:
    """Show which exercises you have passed, per chapter. ``reset=True`` deletes the record, after
    asking (type ``yes``)."""
    where = path()
    if not reset:
        return summary(where)
    count = len(load(where)["passed"])
    if not where.exists():
        print(f"Nothing to delete: there is no progress record at {where}.")
        return None
    answer = ask(f"Delete your progress record {where} ({count} exercises passed)? Type yes: ")
    if answer.strip().lower() != "yes":
        print("Kept your progress record.")
        return None
    where.unlink()
    print(f"Deleted {where}.")
    return None


class _CallableModule(types.ModuleType):
    """``gu.progress()`` calls :func:`progress`; ``gu.progress.summary()`` etc. stay reachable."""

    def __call__(self, reset: bool = False, **kwargs):
        return progress(reset, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
