"""The course bundle for Google Drive (chapter 00, "Running the course elsewhere"; README, "Colab").

``python -m gpu_utils.colab bundle --out DIR`` writes ``DIR/gpu-course-VERSION.zip``: one folder,
``gpu-course-VERSION/``, holding what a learner needs (the chapters, the generated labs,
``gpu_utils``, ``requirements``, ``pyproject.toml``, ``README.md``; not the solutions) and the
marker ``gpu-course.json`` (course name, version from pyproject.toml, git commit and its date,
whether the bundled files differ from that commit). The Colab install cell finds the course in
Drive by that marker (:mod:`gpu_utils.colab`, ``drive``). The files are the repository's tracked
files as they are on disk; the zip is deterministic: the same files give the same bytes (sorted
entries, fixed dates and permissions), so two bundles of one commit can be compared by checksum.
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

from .. import colab
from . import publish

#: What a learner gets: folders and files of the repository, tracked by git.
CONTENTS = ("notebooks", "labs", "gpu_utils", "requirements", "pyproject.toml", "README.md")
FORMAT = "gpu-course-bundle/1"
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip can hold: no build time leaks in


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise ValueError(f"`git {args[0]}` could not run ({error}): bundle from a clone") from None
    if done.returncode != 0:
        raise ValueError(
            f"`git {' '.join(args)}` failed ({done.stderr.strip()[:200]}): the bundle is made "
            "from a git clone of the course"
        )
    return done.stdout


def files(root: Path = colab.ROOT) -> list[str]:
    """The repository paths that go into the bundle (tracked, present on disk), sorted."""
    listed = _git(root, "ls-files", "-z", "--", *CONTENTS).split("\0")
    return sorted(p for p in listed if p and (root / p).is_file() and "__pycache__" not in p)


def marker(root: Path = colab.ROOT, paths: list[str] | None = None) -> dict:
    """The bundle's ``gpu-course.json``: what course, which version, from which commit."""
    text = (root / "pyproject.toml").read_text()
    name, version = publish._value(text, "project", "name"), publish.project_version(text)
    if not name or not version:
        raise ValueError("pyproject.toml has no [project] name and version: cannot name the bundle")
    commit, date = _git(root, "log", "-1", "--format=%H %cI").split()
    changed = _git(root, "status", "--porcelain", "--", *(paths or files(root)))
    return {
        "format": FORMAT,
        "name": name,
        "version": version,
        "commit": commit,
        "date": date,
        "modified": bool(changed.strip()),  # bundled files that differ from the commit
    }


def out_of_step(paths: list[str], root: Path = colab.ROOT) -> list[str]:
    """The bundled notebooks whose badge, metadata or install cell is not what
    ``python -m gpu_utils.colab sync`` writes (:func:`publish.stale`): their cell would look for
    another version of the course than the bundle's."""
    return publish.stale([root / p for p in paths if p.endswith(".ipynb")], root)


def bundle(out: Path, root: Path = colab.ROOT, check_notebooks: bool = True) -> Path:
    """Write ``out/gpu-course-VERSION.zip`` and return its path. Raises ValueError, saying what to
    run, when a notebook's install cell is out of step (``check_notebooks``)."""
    paths = files(root)
    stale = out_of_step(paths, root) if check_notebooks else []
    if stale:
        raise ValueError(
            f"{len(stale)} notebooks have an install cell out of step with pyproject.toml (e.g. "
            f"{stale[0]}): run `python -m gpu_utils.colab sync`, commit, then bundle again"
        )
    record = marker(root, paths)
    top = f"gpu-course-{record['version']}"
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{top}.zip"
    partial = target.with_suffix(".zip.partial")
    entries = [(colab.COURSE_MARKER, (json.dumps(record, indent=1) + "\n").encode())]
    entries += [(path, (root / path).read_bytes()) for path in paths]
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(entries):
            info = zipfile.ZipInfo(f"{top}/{name}", date_time=_FIXED_DATE)
            info.external_attr = 0o644 << 16  # rw-r--r--, whatever the local umask
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    partial.replace(target)
    return target
