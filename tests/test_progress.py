"""gu.progress(): passes recorded by check, per chapter; reset asks first; a corrupt or unwritable
file never breaks a check (gpu_utils/progress.py)."""

import json
import os

import pytest

import gpu_utils as gu
from conftest import ROOT
from gpu_utils import exercises
from gpu_utils import progress as progress_module


@pytest.fixture
def record_file(tmp_path, monkeypatch):
    where = tmp_path / "progress.json"
    monkeypatch.setenv("GPU_COURSE_PROGRESS", str(where))
    return where


@pytest.fixture
def answer_42(monkeypatch):
    """A throwaway value exercise (quick, no kernel), registered for one test only."""
    from gpu_utils.exercises import _registry

    def run(answer):
        if answer == 42:
            return _registry.passed("progress_demo", "42 it is.")
        return _registry.failed("progress_demo", f"{answer!r} is not 42.")

    demo = _registry.Exercise("progress_demo", "99_demo", "demo", "", "", run, kind="value")
    monkeypatch.setitem(_registry._EXERCISES, demo.id, demo)
    return demo.id


def test_path_is_home_by_default_and_never_inside_the_repository(monkeypatch, tmp_path):
    monkeypatch.delenv("GPU_COURSE_PROGRESS", raising=False)
    assert progress_module.path() == progress_module.default_path()
    monkeypatch.setenv("GPU_COURSE_PROGRESS", str(ROOT / "progress.json"))
    assert progress_module.path() == progress_module.default_path()
    monkeypatch.setenv("GPU_COURSE_PROGRESS", str(tmp_path / "mine.json"))
    assert progress_module.path() == tmp_path / "mine.json"


def test_record_then_show_per_chapter(record_file):
    some = exercises.ids()[0]
    chapter = exercises.get(some).chapter
    assert progress_module.record(some, chapter)
    assert progress_module.record(some, chapter)
    data = json.loads(record_file.read_text())
    assert data["passed"][some]["passes"] == 2 and data["passed"][some]["chapter"] == chapter
    shown = gu.progress()  # the module is callable: gu.progress()
    row = next(r for r in shown.rows if r[0] == chapter)
    assert row[1] == 1 and some not in row[3]
    assert shown.passed == 1 and shown.total == len(exercises.ids())
    assert f"chapter {chapter}: 1/" in repr(shown)
    assert "<table>" in shown._repr_html_()


def test_a_passing_check_is_recorded_and_a_failing_one_is_not(record_file, answer_42):
    exercise_id, reference = answer_42, 42
    assert not exercises.check(exercise_id, object())
    assert not record_file.exists()
    assert exercises.check(exercise_id, reference)
    assert exercise_id in json.loads(record_file.read_text())["passed"]


def test_a_corrupt_file_never_breaks_a_check_and_is_kept_aside(record_file, answer_42):
    exercise_id, reference = answer_42, 42
    record_file.write_text("{not json")
    assert exercises.check(exercise_id, reference).passed
    assert exercise_id in json.loads(record_file.read_text())["passed"]
    assert list(record_file.parent.glob("progress.json.corrupt-*"))
    assert gu.progress().passed == 1


def test_an_unwritable_place_never_breaks_a_check(tmp_path, monkeypatch, answer_42):
    exercise_id, reference = answer_42, 42
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("GPU_COURSE_PROGRESS", str(blocker / "progress.json"))  # parent is a file
    assert exercises.check(exercise_id, reference).passed
    assert progress_module.record(exercise_id) is False
    assert gu.progress().passed == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write to read-only directories")
def test_a_read_only_directory_never_breaks_a_record(tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    monkeypatch.setenv("GPU_COURSE_PROGRESS", str(folder / "progress.json"))
    assert progress_module.record("anything") is False


def test_reset_asks_and_keeps_the_file_unless_told_yes(record_file, capsys):
    progress_module.record(exercises.ids()[0])
    assert gu.progress(reset=True, ask=lambda prompt: "no") is None
    assert record_file.exists() and "Kept" in capsys.readouterr().out
    questions = []
    gu.progress(reset=True, ask=lambda prompt: questions.append(prompt) or "yes")
    assert "1 exercises passed" in questions[0] and str(record_file) in questions[0]
    assert not record_file.exists()
    gu.progress(reset=True, ask=lambda prompt: pytest.fail("asked with nothing to delete"))


def test_the_view_says_how_old_the_record_is(record_file):
    import datetime

    some = exercises.ids()[0]
    passed = {
        some: {"first": "2026-11-01T10:00:00+00:00", "last": "2026-11-03T08:00:00+00:00"},
        "gone_exercise": {"first": "2026-10-30T09:00:00+00:00", "last": "nonsense"},
    }
    record_file.write_text(json.dumps({"format": "gpu-course-progress/1", "passed": passed}))
    now = datetime.datetime(2026, 11, 3, 10, 30, tzinfo=datetime.timezone.utc)
    shown = progress_module.summary(record_file, now=now)
    assert shown.age == "record started 2026-10-30 (4 days ago), latest pass 2 hours ago"
    assert shown.age in repr(shown) and shown.age in shown._repr_html_()
    record_file.unlink()
    assert progress_module.summary(record_file).age == "no passes recorded yet"


def test_maintainer_runs_record_in_a_scratch_file_not_the_learners():
    """make test/execute run the notebooks' check cells: their passes must not land in the
    learner's ~/.gpu-course/progress.json (gu.progress() showed passes nobody made)."""
    import re

    makefile = (ROOT / "Makefile").read_text()
    exported = set()
    for targets in re.findall(r"^([\w -]+): export GPU_COURSE_PROGRESS :=", makefile, re.M):
        exported |= set(targets.split())
    assert {"unit", "notebooks", "test-gpu", "execute"} <= exported


def test_exercises_record_without_importing_the_progress_view():
    """One-way: the checkers write the record; gu.progress() (above them) reads it."""
    import ast

    for module in ("exercises/__init__.py", "_progress_file.py"):
        tree = ast.parse((ROOT / "gpu_utils" / module).read_text())
        imported = {
            node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
        }
        assert not any(name.endswith("progress") for name in imported), module


def test_the_summary_loads_no_chapter_checker(tmp_path):
    """gu.progress() groups exercises by chapter from the registry's index: it imports neither
    torch nor any chapter's checkers (which can take seconds)."""
    import subprocess
    import sys

    code = (
        "import sys, gpu_utils as gu; p = gu.progress.summary(); "
        "print(len(p.rows), 'torch' in sys.modules, "
        "any(m.startswith('gpu_utils.exercises.ch') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**__import__("os").environ, "GPU_COURSE_PROGRESS": str(tmp_path / "p.json")},
    ).stdout.split()
    assert int(out[0]) >= 13 and out[1:] == ["False", "False"]
