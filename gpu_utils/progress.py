"""Progress for self-paced learners (chapter 00, "How labs work"): ``gu.progress()``.

Every exercise a learner passes is recorded, when ``gu.exercises.check`` passes, in a small JSON
file on the learner's machine: ``~/.gpu-course/progress.json``, or the file named by the
environment variable ``GPU_COURSE_PROGRESS``, never inside the course's repository (a path there
falls back to the default). Recording never breaks a check: a corrupt file is set aside and a new
one started, an unwritable one is skipped. ``gu.progress()`` shows passed exercises per chapter;
``gu.progress(reset=True)`` asks before deleting anything. Instructors collect these files and
summarise a class with ``python -m gpu_utils summary`` (see ``gpu_utils.workshop``).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import html
import json
import os
import sys
import tempfile
import types
from pathlib import Path

ENV = "GPU_COURSE_PROGRESS"
REPOSITORY = Path(__file__).resolve().parent.parent
FORMAT = "gpu-course-progress/1"


def default_path() -> Path:
    return Path.home() / ".gpu-course" / "progress.json"


def path() -> Path:
    """Where progress is kept: ``$GPU_COURSE_PROGRESS`` unless it points into the repository."""
    chosen = os.environ.get(ENV, "").strip()
    if not chosen:
        return default_path()
    target = Path(chosen).expanduser().resolve()
    if target.is_relative_to(REPOSITORY):
        return default_path()  # never inside the course's repository (it would be committed)
    return target


def load(where: Path | None = None) -> dict:
    """The progress record (an empty one when missing or unreadable)."""
    where = where or path()
    try:
        data = json.loads(where.read_text())
        if isinstance(data, dict) and isinstance(data.get("passed"), dict):
            return data
    except (OSError, ValueError):
        pass
    return {"format": FORMAT, "passed": {}}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def record(exercise_id: str, chapter: str = "", where: Path | None = None) -> bool:
    """Record a pass; False (and nothing raised) when the file cannot be written."""
    where, temporary = where or path(), None
    try:
        if where.exists():
            try:
                data = json.loads(where.read_text())
                if not isinstance(data, dict) or not isinstance(data.get("passed"), dict):
                    raise ValueError("not a progress record")
            except ValueError:  # corrupt: keep it aside for a look, start a new record
                where.replace(where.with_name(f"{where.name}.corrupt-{os.getpid()}"))
                data = {"format": FORMAT, "passed": {}}
        else:
            data = {"format": FORMAT, "passed": {}}
        entry = data["passed"].setdefault(exercise_id, {"chapter": chapter, "first": _now()})
        entry["last"] = _now()
        entry["passes"] = int(entry.get("passes", 0)) + 1
        where.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=where.parent, prefix=".progress-", suffix=".json", delete=False
        ) as handle:
            temporary = handle.name
            json.dump(data, handle, indent=1, sort_keys=True)
        os.replace(temporary, where)
        return True
    except Exception:  # read-only home, full disk, a directory in the way: never break a check
        if temporary:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        return False


def recorded(check):
    """Wrap ``gu.exercises.check`` so a pass is recorded; recording never changes the result."""

    @functools.wraps(check)
    def wrapper(exercise_id, answer, *args, **kwargs):
        result = check(exercise_id, answer, *args, **kwargs)
        with contextlib.suppress(Exception):
            if result.passed:
                from .exercises import get

                record(exercise_id, get(exercise_id).chapter)
        return result

    return wrapper


class Progress:
    """Passed exercises per chapter; shows as a table in a notebook and as text elsewhere."""

    def __init__(self, rows: list[tuple[str, int, int, list[str]]], where: Path):
        self.rows, self.where = rows, where

    @property
    def passed(self) -> int:
        return sum(row[1] for row in self.rows)

    @property
    def total(self) -> int:
        return sum(row[2] for row in self.rows)

    def __repr__(self) -> str:
        lines = [f"Progress ({self.where}): {self.passed} of {self.total} exercises passed"]
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
            f"<p>{self.passed} of {self.total} exercises passed "
            f"(<code>{html.escape(str(self.where))}</code>)</p><table><tr><th>chapter</th>"
            f"<th>passed</th><th></th><th>to do</th></tr>{cells}</table>"
        )


def summary(where: Path | None = None) -> Progress:
    """Per chapter: passed, total, and the exercises still to do."""
    from .exercises import get, ids

    where = where or path()
    passed = load(where)["passed"]
    chapters: dict[str, list[str]] = {}
    for exercise_id in ids():
        chapters.setdefault(get(exercise_id).chapter, []).append(exercise_id)
    rows = []
    for chapter, exercises in sorted(chapters.items()):
        missing = [e for e in exercises if e not in passed]
        rows.append((chapter, len(exercises) - len(missing), len(exercises), missing))
    return Progress(rows, where)


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
