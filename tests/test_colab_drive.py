"""The course on Colab before publication, end to end and offline: the real bundle
(``python -m gpu_utils.colab bundle``) in a fake Google Drive (a fake ``google.colab`` whose
``drive.mount`` links a local folder), the real install cell (``gpu_utils.authoring.install_cell``,
as ``publish.cell_block`` writes it) run by IPython in a child Python, pip resolving against what is installed (``--no-index
--dry-run``: nothing downloaded, nothing changed), then chapter 03's first check in simulator mode
from the copied course; and each way the set-up stops, with its message and no traceback.

What only a real Colab can show (the consent prompt, Drive's FUSE mount, a T4) is CONTRIBUTING's
"Colab manual check". ``make test-colab`` runs this file on Python 3.13 with Colab's numpy and
numba; it runs under the main venv too.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy
import pytest

from conftest import ROOT
from gpu_utils import colab
from gpu_utils.authoring import colab_bundle, publish

pytest.importorskip("IPython", reason="the install cell is run by IPython, as on Colab")
HAS_TORCH = importlib.util.find_spec("torch") is not None

#: A fake google.colab: ``drive.mount`` links $FAKE_DRIVE at the mount point, or fails as Colab's
#: does when the learner refuses access or the mount times out ($FAKE_DRIVE_FAILS).
FAKE_DRIVE = """
import os


def mount(mountpoint, force_remount=False, timeout_ms=120000, readonly=False):
    if os.environ.get("FAKE_DRIVE_FAILS"):
        raise ValueError(os.environ["FAKE_DRIVE_FAILS"])
    if not os.path.exists(mountpoint):
        os.symlink(os.environ["FAKE_DRIVE"], mountpoint)
    print(f"Mounted at {mountpoint}")
"""

#: The child: IPython runs the install cell, then (when it finished) the notebook's next lines.
RUNNER = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell

import google.colab  # the fake one: on Colab the kernel has imported it

shell = InteractiveShell.instance()
cell, after = json.load(open(sys.argv[1]))
result = shell.run_cell(cell)
print("CELL-STOPPED" if result.error_in_exec else "CELL-FINISHED", flush=True)
if not result.error_in_exec and after:
    result = shell.run_cell(after)
    print("AFTER-FAILED" if result.error_in_exec else "AFTER-FINISHED", flush=True)
"""

#: Chapter 03's first exercise, answered as the lab's solution does, checked from the copy.
FIRST_CHECK = """
import gpu_utils as gu
from numba import cuda

print("gpu_utils from", gu.__file__)
print(gu.banner())


@cuda.jit
def vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


result = gu.exercises.check("vector_add", vector_add)
print("CHECK-PASSED" if result.passed else "CHECK-FAILED", result.message)
"""


@pytest.fixture(scope="module")
def course_zip(tmp_path_factory):
    """The real bundle of this checkout (tracked files as they are on disk). The tests run the
    install cell that colab.py writes now, so they do not need the notebooks synced with it;
    test_the_bundle_refuses_notebooks_out_of_step covers that check."""
    return colab_bundle.bundle(tmp_path_factory.mktemp("bundle"), check_notebooks=False)


def _unzip(archive: Path, into: Path) -> Path:
    with zipfile.ZipFile(archive) as opened:
        opened.extractall(into)
    return into / archive.stem  # the bundle's one folder, gpu-course-VERSION


def _with_version(folder: Path, version: str) -> Path:
    marker = folder / colab.COURSE_MARKER
    marker.write_text(json.dumps(json.loads(marker.read_text()) | {"version": version}))
    return folder


class Colab:
    """A fake Colab runtime in ``tmp``: ``content`` is its /content, ``drive`` the learner's
    Drive (My Drive inside it)."""

    def __init__(self, tmp: Path):
        self.tmp, self.content, self.drive = tmp, tmp / "content", tmp / "drive"
        self.my_drive = self.drive / "MyDrive"
        self.my_drive.mkdir(parents=True)
        self.content.mkdir()
        (tmp / "home").mkdir()
        package = tmp / "fake" / "google" / "colab"  # google/ stays a namespace package
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("from . import drive\n")
        (package / "drive.py").write_text(FAKE_DRIVE)

    def cell(self) -> str:
        """The install cell as the notebooks carry it before publication, with /content here."""
        saved = publish.REPOSITORY, publish.REF
        publish.REPOSITORY = publish.REF = None
        try:
            source = publish.cell_block()
        finally:
            publish.REPOSITORY, publish.REF = saved
        assert source.count("/content") >= 5
        return source.replace("/content", str(self.content))

    def run(self, after: str = "", fails: str = "", timeout: int = 300) -> str:
        job = self.tmp / "job.json"
        job.write_text(json.dumps([self.cell(), after]))
        (self.tmp / "runner.py").write_text(RUNNER)
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("KAGGLE_", "GPU_"))}
        environ |= {
            "COLAB_RELEASE_TAG": "fake",
            "FAKE_DRIVE": str(self.drive),
            "GPU_COURSE_COLAB_OFFLINE": "1",  # pip: --no-index --dry-run, course on sys.path
            "GPU_COURSE_MODE": "simulator",
            "PYTHONPATH": str(self.tmp / "fake"),
            "HOME": str(self.tmp / "home"),  # a progress file outside Drive would land here
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        if fails:
            environ["FAKE_DRIVE_FAILS"] = fails
        done = subprocess.run(
            [sys.executable, str(self.tmp / "runner.py"), str(job)],
            cwd=self.tmp,
            env=environ,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return done.stdout + done.stderr


def _stopped_with(output: str, message: str) -> None:
    assert "CELL-STOPPED" in output, output[-3000:]
    assert message in output, output[-3000:]
    for internal in ("Traceback", "SetUpStop", 'File "', "gpu-course-boot"):
        assert internal not in output, output[-3000:]


# --- the bundle ----------------------------------------------------------------------------------


def test_the_bundle_is_one_folder_with_its_marker_and_what_a_learner_needs(course_zip):
    with zipfile.ZipFile(course_zip) as archive:
        names = archive.namelist()
        top = f"gpu-course-{publish.VERSION}"
        assert course_zip.name == f"{top}.zip"
        assert all(name.startswith(f"{top}/") for name in names)
        marker = json.loads(archive.read(f"{top}/{colab.COURSE_MARKER}"))
    assert marker["name"] == "gpus-for-ml-course" and marker["version"] == publish.VERSION
    is_ancestor = ["git", "merge-base", "--is-ancestor", marker["commit"], "HEAD"]
    assert subprocess.run(is_ancestor, cwd=ROOT).returncode == 0  # HEAD, or before a new commit
    inside = {name.split("/", 1)[1] for name in names}
    for needed in (
        "pyproject.toml",
        "README.md",
        "gpu_utils/__init__.py",
        "gpu_utils/colab.py",
        "gpu_utils/exercises/ch03_first_kernels.py",
        "notebooks/03_first_kernels.ipynb",
        "labs/03_first_kernels_lab.ipynb",
        "requirements/course-cu12.txt",
        "requirements/course.txt",
    ):
        assert needed in inside, needed
    assert not any(name.startswith(("solutions/", "tests/")) for name in inside)
    assert not any("__pycache__" in name for name in inside)


def test_the_bundle_is_deterministic(tmp_path):
    first = colab_bundle.bundle(tmp_path / "first", check_notebooks=False).read_bytes()
    again = colab_bundle.bundle(tmp_path / "again", check_notebooks=False).read_bytes()
    assert again == first  # same files, same bytes: no dates, no order, no umask


def test_the_bundle_refuses_notebooks_out_of_step(monkeypatch):
    paths = colab_bundle.files()
    monkeypatch.setattr(publish, "VERSION", "0.0.0-not-synced")  # as after a version bump
    stale = colab_bundle.out_of_step(paths)
    assert stale == [p for p in paths if p.endswith(".ipynb")]
    with pytest.raises(ValueError, match=r"run `python -m gpu_utils.colab sync`"):
        colab_bundle.bundle(Path("/nonexistent"))


@pytest.mark.skipif(
    bool(colab_bundle.out_of_step(colab_bundle.files())),
    reason="notebooks not synced yet: run `python -m gpu_utils.colab sync`",
)
def test_the_bundle_command_line(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "gpu_utils.colab", "bundle", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"wrote {tmp_path / f'gpu-course-{publish.VERSION}.zip'}"


def test_a_bundle_needs_a_git_clone(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    with pytest.raises(ValueError, match="git clone"):
        colab_bundle.bundle(tmp_path / "out", root=tmp_path)


# --- end to end: the install cell under a fake Colab ---------------------------------------------


@pytest.mark.parametrize("form", ["zip", "folder"])
def test_the_install_cell_installs_the_course_from_drive_and_a_check_passes(
    course_zip, tmp_path, form
):
    runtime = Colab(tmp_path)
    place = runtime.my_drive / "Colab Notebooks" / "GPU course"  # spaces, as Drive's own names
    place.mkdir(parents=True)
    if form == "zip":
        shutil.copy(course_zip, place)
    else:
        course = _unzip(course_zip, place)  # unzipped in Drive
        shutil.copy(course_zip, place)  # the zip it came from, left beside it: the folder wins
    output = runtime.run(FIRST_CHECK)
    assert "CELL-FINISHED" in output, output[-4000:]
    copy = runtime.content / "gpu-course"
    assert f"gpu_utils from {copy / 'gpu_utils' / '__init__.py'}" in output  # the local copy
    # The same plan as the published path: the lock's numba-cuda, the runtime's numpy kept.
    record = json.loads((runtime.content / ".gpu-course-installed").read_text())
    lock = colab._locked((copy / "requirements" / "course.txt").read_text())
    assert record["packages"][0] == f"numba-cuda=={lock['numba-cuda']}"  # no GPU: no extra
    kept = (runtime.content / ".gpu-course-constraints.txt").read_text()
    assert f"numpy=={numpy.__version__}" in kept.splitlines()
    if "AFTER-FAILED" in output and "No module named 'torch'" in output and not HAS_TORCH:
        pytest.skip(
            "the course is installed from Drive, but gu.exercises loads every chapter's checkers "
            "and chapter 08b's import torch, which this Python lacks (Colab has it)"
        )
    assert "AFTER-FINISHED" in output and "CHECK-PASSED" in output, output[-4000:]
    source = place / course_zip.name if form == "zip" else course
    source = runtime.content / "drive" / source.relative_to(runtime.drive)  # as the cell sees it
    assert f"The course {publish.VERSION}, from {source}." in output
    # This machine has no GPU: a warning that says how to switch, not a stop.
    assert "has no GPU" in output and colab.SWITCH_TO_GPU in output
    assert "Traceback" not in output, output[-4000:]
    progress = json.loads((place / colab.PROGRESS_NAME).read_text())  # in Drive, beside it
    assert "vector_add" in progress["passed"]
    assert not (tmp_path / "home" / ".gpu-course").exists()
    # A second notebook in the same runtime: nothing to do, and the progress still goes to Drive.
    again = runtime.run("import os\nprint('PROGRESS', os.environ['GPU_COURSE_PROGRESS'])")
    assert f"PROGRESS {source.parent / colab.PROGRESS_NAME}" in again, again[-3000:]
    assert "Mounted" not in again


# --- every way the set-up stops: one message, what to do, no traceback ---------------------------


@pytest.mark.parametrize(
    "error", ["mount failed", "mount failed: timeout during initial read of root folder"]
)
def test_no_consent_or_a_mount_that_times_out_stops_the_cell(tmp_path, error):
    output = Colab(tmp_path).run(fails=error)
    _stopped_with(output, colab.DRIVE_FAILED)
    assert error in output


def test_no_course_in_drive_stops_the_cell(tmp_path):
    runtime = Colab(tmp_path)
    (runtime.my_drive / "Photos").mkdir()
    (runtime.my_drive / "notes.zip").write_bytes(b"not the course")
    _stopped_with(runtime.run(), colab.NO_COURSE)


def test_the_search_is_bounded_in_depth_and_skips_huge_folders(course_zip, tmp_path):
    runtime = Colab(tmp_path)
    deep = runtime.my_drive / "a" / "b" / "c" / "d" / "e"  # five folders below My Drive
    deep.mkdir(parents=True)
    shutil.copy(course_zip, deep)
    huge = runtime.my_drive / "photos"
    huge.mkdir()
    for index in range(1000):
        (huge / f"{index:04}.jpg").touch()
    (huge / "kept").mkdir()  # a folder in a folder of 1,000 names: not entered
    shutil.copy(course_zip, huge / "kept")
    _stopped_with(runtime.run(), colab.NO_COURSE)
    shutil.move(deep / course_zip.name, deep.parent)  # four folders deep: found
    assert "CELL-FINISHED" in runtime.run(), "a course four folders deep was not found"


def test_two_versions_of_the_course_stop_the_cell(course_zip, tmp_path):
    runtime = Colab(tmp_path)
    _unzip(course_zip, runtime.my_drive / "new")
    _with_version(_unzip(course_zip, runtime.my_drive / "old"), "0.0.1")
    output = runtime.run()
    _stopped_with(output, "Your Google Drive holds 2 versions of the course")
    assert "version 0.0.1" in output and "delete or move the others" in output


def test_two_copies_of_one_version_stop_the_cell(course_zip, tmp_path):
    runtime = Colab(tmp_path)
    _unzip(course_zip, runtime.my_drive / "one")
    _unzip(course_zip, runtime.my_drive / "two")
    _stopped_with(runtime.run(), "Your Google Drive holds 2 copies of the course")


def test_a_bundle_of_another_version_than_the_notebook_stops_the_cell(course_zip, tmp_path):
    runtime = Colab(tmp_path)
    _with_version(_unzip(course_zip, runtime.my_drive), "9.9.9")
    output = runtime.run()
    _stopped_with(output, f"This notebook belongs to version {publish.VERSION} of the course")
    assert "is version 9.9.9" in output and "File > Open notebook > Google Drive" in output


def test_the_cell_does_nothing_outside_colab(tmp_path):
    runtime = Colab(tmp_path)
    job = tmp_path / "job.json"
    job.write_text(json.dumps([runtime.cell(), ""]))
    (tmp_path / "runner.py").write_text(RUNNER.replace("import google.colab", "pass"))
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("COLAB_", "KAGGLE_"))}
    done = subprocess.run(
        [sys.executable, str(tmp_path / "runner.py"), str(job)],
        env=environ | {"PYTHONPATH": str(tmp_path / "fake")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "CELL-FINISHED" in done.stdout, done.stdout + done.stderr
    assert list(runtime.content.iterdir()) == []
