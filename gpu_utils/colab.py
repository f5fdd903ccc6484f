"""Colab's side of the course (chapter 00, "Running the course elsewhere"): what the install cell
runs on a Colab runtime, and which pinned set a CUDA driver needs.

- ``lock_for()`` names the pinned set that matches a driver: CUDA 12 drivers (Colab's 550 series,
  driver < 580) get ``requirements/course-cu12.txt``, CUDA 13 drivers and machines without a GPU
  get ``requirements/course.txt``. The Makefile calls this file as a script (``lock``); the driver
  itself is asked by :mod:`gpu_utils.driver`, the course's one driver probe.
- Once the course is published, the first code cell of every notebook clones the release tag it
  was built for (a half-finished clone is replaced), runs this file (``%run .../colab.py
  install``), and raises a clear error before ``import gpu_utils`` when the set-up did not finish
  (``%run`` swallows errors). The install (:func:`plan`, pure and tested without network) installs
  ``gpu_utils`` and numba-cuda for the CUDA major of Colab's preinstalled stack whenever the driver
  supports it (so Colab's CUDA 12 cuda-bindings, which cuDF needs, are not replaced), keeps Colab's
  own torch, cupy and numpy (pip constraints on their installed versions), bounds its fallback to
  numba-cuda 0.30, prints the lines in which pip reports that it broke one of Colab's packages
  (cuDF needs an older numba-cuda), and leaves a marker so it runs once per runtime.
- Before publication (and for a private copy), the course comes from the learner's Google Drive:
  the install cell mounts Drive, finds the marker ``gpu-course.json`` (or a zip holding it) by a
  bounded search, and runs this file's ``drive`` command (:func:`drive_install`): one course of
  the notebook's version (:func:`choose`, else one message saying what to do), copied or unpacked
  to /content, installed as above, the progress file kept in Drive beside it.

The author's side is in :mod:`gpu_utils.authoring`: where the course is published, the badges and
``sync`` (:mod:`gpu_utils.authoring.publish`), the install cell written into every notebook
(:mod:`gpu_utils.authoring.install_cell`) and the Drive bundle
(:mod:`gpu_utils.authoring.colab_bundle`). ``python -m gpu_utils.colab sync`` and ``bundle`` run
them, as before.

Standard library only, and no other module of the package at import: Colab runs this file before
``gpu_utils`` is installed (from the clone, or as a copy in /content); :func:`_driver` loads
``gpu_utils/driver.py`` by its path.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLONE_DIR = "/content/gpu-course"  # where the install cell clones the course on Colab
MARKER = "/content/.gpu-course-installed"  # written after a successful install: once per runtime
CLONE_DONE = ".gpu-course-clone-{ref}"  # written in the clone once `git clone` of ref has finished
KEPT = ("torch", "numpy", "cupy-cuda12x", "cupy-cuda13x")  # Colab's own builds are never replaced

#: The numba-cuda releases the course works with (its simulator internals are patched for 0.30).
NUMBA_CUDA_RANGE = ">=0.30,<0.31"

#: Set to 1 by tests only: pip resolves against installed packages (--no-index --dry-run) and the
#: course is put on sys.path instead of installed, so the install path runs offline.
OFFLINE_ENV = "GPU_COURSE_COLAB_OFFLINE"

SWITCH_TO_GPU = (
    "Runtime > Change runtime type > T4 GPU > Save, then run the notebook again from the top"
)


# --- where are we, and what does the driver support --------------------------------------------


def is_colab(environ=None, modules=None) -> bool:
    """True on Google Colab only: its kernel module and its release tag, and not Kaggle (Kaggle's
    image is built on Colab's and also sets COLAB_RELEASE_TAG)."""
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    kaggle = any(key.startswith("KAGGLE_") for key in environ)
    return "google.colab" in modules and "COLAB_RELEASE_TAG" in environ and not kaggle


def _driver(clone: str | None = None):
    """The course's one driver probe, :mod:`gpu_utils.driver`: the package's module when this file
    is part of the imported package, else ``driver.py`` beside this file (``%run`` of the clone's
    copy, the Makefile), else the one in ``clone`` (the Drive set-up runs a copy of this file from
    /content, after copying the course to ``clone``)."""
    if __package__:
        from . import driver

        return driver
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    for folder in (here, os.path.join(clone or CLONE_DIR, "gpu_utils")):
        path = os.path.join(folder, "driver.py")
        if os.path.exists(path):
            spec = importlib.util.spec_from_file_location("_gpu_course_driver", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise FileNotFoundError(f"gpu_utils/driver.py is neither beside {here} nor in {clone}")


def cuda_major(driver: tuple[int, int] | None) -> int | None:
    """12 or 13: the CUDA wheel family a driver can load; None for no driver (the simulator)."""
    if driver is None:
        return None
    return 12 if driver[0] <= 12 else 13


def lock_for(driver: tuple[int, int] | None) -> str:
    """The requirements file ``make`` installs for this driver (relative to the repository)."""
    return "requirements/course-cu12.txt" if cuda_major(driver) == 12 else "requirements/course.txt"


# --- what the Colab install cell does -----------------------------------------------------------


@dataclass
class Plan:
    """What the Colab install does on one runtime: pip arguments, constraints, what it says."""

    cuda: int | None
    packages: list[str]
    constraints: dict[str, str]
    messages: list[str] = field(default_factory=list)
    fallback: list[str] = field(default_factory=list)  # when the pinned numba-cuda does not fit

    def pip_args(self, constraints_file: str, packages: list[str] | None = None) -> list[str]:
        # Not --quiet: the output is captured anyway, and its conflict lines are read (conflicts()).
        args = ["install", *(self.packages if packages is None else packages)]
        return args + (["--constraint", constraints_file] if self.constraints else [])


def _locked(lock_text: str) -> dict[str, str]:
    pins = {}
    for line in lock_text.splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            pins[re.sub(r"\[.*\]", "", name).strip().lower()] = version.strip()
    return pins


def _release(version: str | None) -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def preinstalled_cuda(installed: dict[str, str]) -> int | None:
    """The CUDA major of the runtime's own CUDA stack (cuda-bindings, else torch's +cuXYZ build,
    else its CuPy), or None when it has none."""
    if "cuda-bindings" in installed:
        return _release(installed["cuda-bindings"])[0] or None
    torch = re.search(r"\+cu(\d\d)\d$", installed.get("torch", ""))
    if torch:
        return int(torch.group(1))
    for major in (12, 13):
        if f"cupy-cuda{major}x" in installed:
            return major
    return None


def plan(
    driver: tuple[int, int] | None, gpus: int, installed: dict[str, str], lock_text: str = ""
) -> Plan:
    """Decide the Colab install for a driver (None: CPU runtime), the GPU count and the packages
    already installed (name -> version). Pure: tested without network."""
    major = cuda_major(driver) if gpus else None
    stack = preinstalled_cuda(installed)
    kept_stack = major is not None and stack is not None and stack < major
    if kept_stack:  # a newer driver runs the older CUDA stack; replacing it would break cuDF
        major = stack
    pins = _locked(lock_text)
    keep = {name: installed[name] for name in KEPT if name in installed}
    extra = f"[cu{major}]" if major else ""
    version = f"=={pins['numba-cuda']}" if "numba-cuda" in pins else NUMBA_CUDA_RANGE
    packages = [f"numba-cuda{extra}{version}"]
    if "cloudpickle" not in installed:
        packages.append("cloudpickle")
    fallback = [f"numba-cuda{extra}{NUMBA_CUDA_RANGE}", *packages[1:]]
    messages = []
    if major is None:
        messages.append(
            "This Colab runtime has no GPU: the course runs on the simulator (slow, and its "
            f"timings are not GPU timings). For a GPU: {SWITCH_TO_GPU}."
        )
    else:
        cupy = f"cupy-cuda{major}x"
        other = f"cupy-cuda{25 - major}x"  # the other CUDA family's cupy
        if cupy not in installed and other not in installed:
            packages.append(cupy)
            fallback.append(cupy)
        elif other in installed:
            messages.append(
                f"Colab's {other} does not match the CUDA {major} packages; the course uses NumPy "
                "where it would use CuPy (Colab's CuPy is left as it is)."
            )
        kept = (
            f"; Colab's own packages are built for CUDA {stack}, which this driver also runs, "
            f"so the course keeps to CUDA {stack}"
            if kept_stack
            else ""
        )
        messages.append(
            f"Installed the course for CUDA {major} (driver supports CUDA "
            f"{driver[0]}.{driver[1]}{kept}); Colab's torch, cupy and numpy are unchanged."
        )
    if _release(installed.get("numpy")) >= (2, 5):
        messages.append(
            f"Colab's numpy {installed['numpy']} no longer has numpy.row_stack, which numba-cuda "
            "0.30 registers: gpu_utils gives it a stand-in when it is imported, so kernels compile "
            "(the course is tested with numpy 2.4; `python -m gpu_utils doctor` says more)."
        )
    return Plan(major, packages, keep, messages, fallback)


#: pip's lines naming an installed package whose requirement the install broke.
_CONFLICT = re.compile(
    r"^(?P<package>[A-Za-z0-9_.-]+) (?P<version>\S+) requires (?P<requirement>.+?), but you have "
    r"(?P<have>[A-Za-z0-9_.-]+) (?P<have_version>\S+) which is incompatible\.?$"
)


def conflicts(pip_output: str) -> list[str]:
    """One sentence per package of the runtime that pip says the install broke (from pip's
    "dependency conflicts" lines), e.g. cuDF, which needs an older numba-cuda."""
    found = []
    for line in pip_output.splitlines():
        match = _CONFLICT.match(line.strip())
        if match:
            package = match["package"]
            name = "cuDF (" + package + ")" if package.startswith("cudf") else package
            found.append(
                f"{name} {match['version']} requires {match['requirement']}, but the course "
                f"installed {match['have']} {match['have_version']}: {name} may not work in this "
                "runtime (the course does not use it)."
            )
    return found


def normalized_name(name: str) -> str:
    """A distribution's name as pip compares it (PEP 503): ``cuda_core`` -> ``cuda-core``."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def _installed() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            found[normalized_name(name)] = dist.version
    return found


def install(clone: str = CLONE_DIR, marker: str = MARKER, ref: str | None = None) -> int:
    """Colab only: install the course from ``clone`` for this runtime; once (marker). Prints what
    it decided and which of Colab's packages pip says it broke; on failure, pip's last lines."""
    if not is_colab():
        return 0
    if os.path.exists(marker):
        return 0
    probe = _driver(clone)
    driver, gpus, installed = probe.cuda_version(), probe.gpu_count(), _installed()
    major = plan(driver, gpus, installed).cuda  # the CUDA set, then its lock's numba-cuda pin
    lock = Path(clone, "requirements/course-cu12.txt" if major == 12 else "requirements/course.txt")
    decided = plan(driver, gpus, installed, lock.read_text() if lock.exists() else "")
    pip = [sys.executable, "-m", "pip"]
    # Tests (tests/test_colab_drive.py): resolve against what is installed, change nothing.
    offline = ["--no-index", "--dry-run"] if os.environ.get(OFFLINE_ENV) == "1" else []
    constraints = os.path.join(os.path.dirname(marker), ".gpu-course-constraints.txt")
    Path(constraints).write_text("".join(f"{n}=={v}\n" for n, v in decided.constraints.items()))
    done = subprocess.run(
        [*pip, *decided.pip_args(constraints), *offline], capture_output=True, text=True
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:  # the pinned numba-cuda does not fit Colab's packages: 0.30.x then
        done = subprocess.run(
            [*pip, *decided.pip_args(constraints, decided.fallback), *offline],
            capture_output=True,
            text=True,
        )
        output = done.stdout + done.stderr
    if done.returncode == 0 and offline:
        sys.path.insert(0, clone)  # a test's stand-in for the editable install below
    elif done.returncode == 0:
        editable = [*pip, "install", "--quiet", "--no-deps", "-e", clone]
        done = subprocess.run(editable, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout[-2000:] + done.stderr[-2000:])
        print(f"The course's install failed (`{' '.join(done.args[2:])}`); see the lines above.")
        return 1
    import importlib
    import site
    import sysconfig

    site.addsitedir(sysconfig.get_paths()["purelib"])  # the editable install's path hook, now
    importlib.invalidate_caches()
    record = {"cuda": decided.cuda, "packages": decided.packages, "ref": ref}
    Path(marker).write_text(json.dumps(record))
    print("\n".join(decided.messages + conflicts(output)))
    return 0


# --- before publication: the course from the learner's Google Drive ------------------------------
# The course bundle (``python -m gpu_utils.colab bundle``, gpu_utils/authoring/colab_bundle.py) is a
# zip of one folder with COURSE_MARKER at its top. The install cell mounts Drive, finds that marker
# (or a zip holding it) with a bounded search (gpu_utils/authoring/install_cell.py), and runs this
# file's ``drive`` command, which picks the one course, copies or unpacks it to local disk and
# installs it with the plan above.

COURSE_MARKER = "gpu-course.json"  # in the course folder: {"name", "version", "commit", "date"}

PROGRESS_NAME = "gpu-course-progress.json"  # beside the course folder in Drive: survives runtimes

STOP_NAME = ".gpu-course-stop"  # in /content: why the Drive set-up stopped (the cell raises it)

FOUND_NAME = ".gpu-course-found.json"  # in /content: what the cell's search found

BOOT_NAME = ".gpu-course-boot.py"  # in /content: this file, taken from the course in Drive

PROGRESS_POINTER = ".gpu-course-progress"  # in /content: where the progress file is, in Drive

DRIVE_STEPS = (
    "put the course's zip (gpu-course-VERSION.zip) anywhere in your Google Drive (My Drive, at "
    "most 4 folders deep), then run this cell again"
)

DRIVE_FAILED = (
    "Google Drive was not mounted, so the course cannot be found (the notebook needs access to "
    "your Drive: allow it in the prompt). Run this cell again; if the mount times out: "
    "Runtime > Disconnect and delete runtime, then run the notebook from the top."
)

NO_COURSE = (
    f"No copy of the course was found in your Google Drive: {DRIVE_STEPS} (a file uploaded a "
    "moment ago can take a minute to appear)."
)

_IGNORED = ("__pycache__", ".ipynb_checkpoints")


def read_marker(path: str) -> dict | None:
    """The course marker of a folder, or of a zip (at its top or in its one top folder); None when
    there is none or it is unreadable."""
    import zipfile

    try:
        if os.path.isdir(path):
            data = json.loads(Path(path, COURSE_MARKER).read_text())
        else:
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.split("/")[-1] == COURSE_MARKER]
                names = [n for n in names if n.count("/") <= 1]
                if len(names) != 1:
                    return None
                data = json.loads(archive.read(names[0]))
                data["_top"] = names[0].rpartition("/")[0]
    except (OSError, ValueError, zipfile.BadZipFile, KeyError):
        return None
    return data if isinstance(data, dict) and data.get("version") else None


class DriveStop(Exception):
    """Why the course cannot be set up from Drive, in words a learner can act on."""


def choose(found: dict[str, dict | None], version: str) -> tuple[str, dict]:
    """The one course to install among ``found`` (path -> marker, None for a zip that is not the
    course): a folder before a zip of the same version (the learner unzipped it). Raises DriveStop
    when there is none, two versions, two copies, or another version than the notebook's."""
    courses = {path: marker for path, marker in found.items() if marker is not None}
    if not courses:
        raise DriveStop(NO_COURSE)
    versions = sorted({marker["version"] for marker in courses.values()})
    listed = "; ".join(f"{path} (version {marker['version']})" for path, marker in courses.items())
    if len(versions) > 1:
        raise DriveStop(
            f"Your Google Drive holds {len(versions)} versions of the course: {listed}. Keep one "
            f"(this notebook is version {version}): delete or move the others out of My Drive, "
            "then run this cell again. Your progress file stays where it is."
        )
    if versions[0] != version:
        raise DriveStop(
            f"This notebook belongs to version {version} of the course, but the copy in your "
            f"Google Drive is version {versions[0]} ({listed}). Open the notebooks from that copy "
            f"(File > Open notebook > Google Drive), or replace it with version {version}'s zip, "
            "then run this cell again."
        )
    folders = [path for path in courses if os.path.isdir(path)]
    if len(folders) > 1 or (not folders and len(courses) > 1):
        raise DriveStop(
            f"Your Google Drive holds {len(courses)} copies of the course: {listed}. Keep one: "
            "delete or move the others out of My Drive, then run this cell again."
        )
    path = folders[0] if folders else next(iter(courses))
    return path, courses[path]


def _copy_course(source: str, marker: dict, local: str) -> None:
    """Copy (a folder) or unpack (a zip) the course to ``local``, replacing an older copy there;
    a copy of the same commit is kept (a second notebook in the same runtime)."""
    import shutil
    import zipfile

    mine = read_marker(local) if os.path.isdir(local) else None
    if mine and (mine.get("version"), mine.get("commit")) == (marker["version"], marker["commit"]):
        return
    partial = local + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    if os.path.isdir(source):
        shutil.copytree(source, partial, ignore=shutil.ignore_patterns(*_IGNORED, PROGRESS_NAME))
    else:
        top = marker["_top"]
        with zipfile.ZipFile(source) as archive:
            unpacked = partial + ".zip"
            shutil.rmtree(unpacked, ignore_errors=True)
            archive.extractall(unpacked)
        os.rename(os.path.join(unpacked, top) if top else unpacked, partial)
        shutil.rmtree(unpacked, ignore_errors=True)
    shutil.rmtree(local, ignore_errors=True)
    os.rename(partial, local)  # whole or not at all: an interrupted copy never counts as done


def drive_install(version: str, content: str = "/content") -> int:
    """Colab, before publication: install the course that the install cell found in Drive (paths
    listed in ``content``/FOUND_NAME). A stop writes its message to ``content``/STOP_NAME, which
    the cell raises; returns 1 then."""
    stop = Path(content, STOP_NAME)
    stop.unlink(missing_ok=True)
    try:
        paths = json.loads(Path(content, FOUND_NAME).read_text())
        source, marker = choose({path: read_marker(path) for path in paths}, version)
        local = os.path.join(content, "gpu-course")
        _copy_course(source, marker, local)
    except DriveStop as error:
        stop.write_text(str(error))
        return 1
    except OSError as error:  # Drive went away, local disk full...
        stop.write_text(
            f"Copying the course from Google Drive failed ({error.strerror or error}). Run this "
            "cell again; if it fails again: Runtime > Disconnect and delete runtime."
        )
        return 1
    progress = os.path.join(os.path.dirname(source), PROGRESS_NAME)
    Path(content, PROGRESS_POINTER).write_text(progress)  # the cell sets GPU_COURSE_PROGRESS
    print(f"The course {version}, from {source}.\nYour progress is kept in {progress}.")
    return install(local, os.path.join(content, os.path.basename(MARKER)), ref=f"drive-{version}")


#: The author's commands, run by :mod:`gpu_utils.authoring.publish` (the package must be
#: importable: a checkout or an install, not Colab's bare copy of this file).
AUTHOR_COMMANDS = ("sync", "bundle")


def main(argv: list[str] | None = None) -> int:
    import argparse

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in AUTHOR_COMMANDS:
        from gpu_utils.authoring import publish

        return publish.main(argv)
    parser = argparse.ArgumentParser(
        prog="python -m gpu_utils.colab",
        description=__doc__,
        epilog="The author's commands, sync and bundle: python -m gpu_utils.colab sync --help",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    install_cmd = commands.add_parser("install", help="Colab only: install the course here")
    install_cmd.add_argument("--ref", help="the release tag the clone was made from")
    drive_cmd = commands.add_parser("drive", help="Colab only: install the course found in Drive")
    drive_cmd.add_argument("--version", required=True, help="the course version of the notebook")
    drive_cmd.add_argument("--content", default="/content", help="Colab's local disk")
    commands.add_parser("lock", help="print the requirements file for this machine's driver")
    commands.add_parser("cuda", help="print the CUDA version the driver supports, or 'none'")
    args = parser.parse_args(argv)
    if args.command == "install":
        return install(ref=args.ref)
    if args.command == "drive":  # run by the install cell's %run: the cell reads the outcome from
        drive_install(args.version, args.content)  # the marker or the stop file, so exit 0 (a
        return 0  # non-zero exit would make %run print "SystemExit: 1" above the cell's message)
    driver = _driver().cuda_version()
    if args.command == "lock":
        print(lock_for(driver))
        return 0
    print(f"{driver[0]}.{driver[1]}" if driver else "none")  # cuda
    return 0


if __name__ == "__main__":
    sys.exit(main())
