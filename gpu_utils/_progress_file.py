"""Where a learner's passes are kept, and writing one (the store behind ``gu.progress()``).

``gu.exercises.check`` records each pass here; :mod:`gpu_utils.progress` (chapter 00, "How labs
work") shows them. Standard library only, and no imports from the package, so recording a pass
depends on nothing above it.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import tempfile
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
