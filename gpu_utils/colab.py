"""Where the course runs besides ``make lab``: Colab, and which CUDA set a driver needs (chapter 00,
"Running the course elsewhere").

- Where the course is published is said once, in ``pyproject.toml``: ``[project.urls] Repository``
  (``https://github.com/OWNER/NAME``) and ``[tool.gpu-course] colab-ref``, the release tag the
  notebooks were built for. Until both are set (the course has no public home yet) ``REPOSITORY``
  is None: notebooks say "Colab link available once the course is published" instead of a badge,
  and their install cell stops on Colab with that message; nothing points at an address that
  somebody else could register. A maintainer publishes with one command,
  ``python -m gpu_utils.colab sync --repository OWNER/NAME --ref TAG`` (the repository defaults to
  ``git remote get-url origin``), which records both in ``pyproject.toml`` and rewrites every
  notebook's "Open in Colab" badge, GPU-runtime metadata and install cell, the labs and the
  README's table; then commit, tag that commit TAG and push both. ``sync --check`` lists what is
  out of step.
- ``driver_cuda_version()`` asks the CUDA driver (``cuDriverGetVersion`` through ctypes, no numba)
  which CUDA version it supports; ``lock_for()`` names the pinned set that matches: CUDA 12 drivers
  (Colab's 550 series, driver < 580) get ``requirements/course-cu12.txt``, CUDA 13 drivers and
  machines without a GPU get ``requirements/course.txt``. The Makefile calls this file as a script.
- Before publication (and for a private copy), the course comes from the learner's Google Drive:
  ``python -m gpu_utils.colab bundle --out DIR`` (gpu_utils/authoring/colab_bundle.py) writes a zip with the
  marker ``gpu-course.json``; the install cell mounts Drive, finds the marker (or a zip holding it)
  by a bounded search, and runs this file's ``drive`` command (:func:`drive_install`): one course
  of the notebook's version (:func:`choose`, else one message saying what to do), copied or
  unpacked to /content, installed as below, the progress file kept in Drive beside it.
- Once published, the first code cell of every notebook clones the release tag it was built for (a
  half-finished clone is replaced), runs this file (``%run .../colab.py install``), and raises a
  clear error before ``import gpu_utils`` when the set-up did not finish (``%run`` swallows
  errors). The install (:func:`plan`, pure and tested without network) installs ``gpu_utils`` and
  numba-cuda for the CUDA major of Colab's preinstalled stack whenever the driver supports it (so
  Colab's CUDA 12 cuda-bindings, which cuDF needs, are not replaced), keeps Colab's own torch, cupy
  and numpy (pip constraints on their installed versions), bounds its fallback to numba-cuda 0.30,
  prints the lines in which pip reports that it broke one of Colab's packages (cuDF needs an older
  numba-cuda), and leaves a marker so it runs once per runtime.

Standard library only at import: Colab runs this file before ``gpu_utils`` is installed.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
CLONE_DIR = "/content/gpu-course"  # where the install cell clones the course on Colab
MARKER = "/content/.gpu-course-installed"  # written after a successful install: once per runtime
CLONE_DONE = ".gpu-course-clone-{ref}"  # written in the clone once `git clone` of ref has finished
COLAB_BADGE_SVG = "https://colab.research.google.com/assets/colab-badge.svg"
PENDING = "Colab link available once the course is published."
DRIVE_HINT = 'open it in Colab from your Google Drive (README, "Colab").'  # in the badge's place
BLOCK_HEADER = "# Colab only: install the course once per runtime (nothing happens anywhere else)."
KEPT = ("torch", "numpy", "cupy-cuda12x", "cupy-cuda13x")  # Colab's own builds are never replaced
#: The numba-cuda releases the course works with (its simulator internals are patched for 0.30).
NUMBA_CUDA_RANGE = ">=0.30,<0.31"
#: Set to 1 by tests only: pip resolves against installed packages (--no-index --dry-run) and the
#: course is put on sys.path instead of installed, so the install path runs offline.
OFFLINE_ENV = "GPU_COURSE_COLAB_OFFLINE"
SWITCH_TO_GPU = (
    "Runtime > Change runtime type > T4 GPU > Save, then run the notebook again from the top"
)
_REPOSITORY_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_REF_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


# --- where the course is published: pyproject.toml, the one source of truth ----------------------


def _section(text: str, name: str) -> tuple[int, int] | None:
    """(start, end) of a TOML table's body, ``[name]`` excluded; None when absent."""
    header = re.search(rf"^\[{re.escape(name)}\][ \t]*$", text, re.M)
    if header is None:
        return None
    following = re.search(r"^\[", text[header.end() :], re.M)
    return header.end(), header.end() + following.start() if following else len(text)


def _value(text: str, table: str, key: str) -> str | None:
    span = _section(text, table)
    if span is None:
        return None
    found = re.search(rf'^{re.escape(key)}\s*=\s*"([^"]*)"', text[span[0] : span[1]], re.M)
    return found.group(1) if found else None


def repository_name(url_or_name: str) -> str | None:
    """``OWNER/NAME`` from a GitHub address (https, ssh or ``OWNER/NAME`` itself), else None."""
    text = url_or_name.strip()
    found = re.match(
        r"^(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)?"
        r"([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$",
        text,
    )
    if not found or ("github.com" not in text and text.count("/") != 1):
        return None
    return found.group(1)


def published(text: str | None = None) -> tuple[str | None, str | None]:
    """(OWNER/NAME, TAG) from pyproject.toml; (None, None) until both are set."""
    if text is None:
        try:
            text = PYPROJECT.read_text()
        except OSError:  # an installed package without its repository
            return None, None
    url = _value(text, "project.urls", "Repository")
    ref = _value(text, "tool.gpu-course", "colab-ref")
    repository = repository_name(url) if url else None
    if repository is None or not ref:
        return None, None
    return repository, ref


def check_publication(repository: str, ref: str) -> None:
    """Raise ValueError, saying what to give, unless ``repository`` is OWNER/NAME and ``ref`` a tag
    name (both end up in a shell command of the install cell, so nothing else is accepted)."""
    if not _REPOSITORY_NAME.match(repository or ""):
        raise ValueError(
            f"--repository {repository!r} is not OWNER/NAME on GitHub (e.g. my-org/gpus-for-ml)."
        )
    if not ref or not _REF_NAME.match(ref) or ".." in ref or ref.endswith((".lock", ".")):
        raise ValueError(f"--ref {ref!r} is not a tag name (e.g. v1.0).")


def with_publication(text: str, repository: str, ref: str) -> str:
    """pyproject.toml's text with ``[project.urls] Repository`` and ``colab-ref`` set."""
    check_publication(repository, ref)
    for table, key, value in (
        ("project.urls", "Repository", f"https://github.com/{repository}"),
        ("tool.gpu-course", "colab-ref", ref),
    ):
        line = f'{key} = "{value}"'
        span = _section(text, table)
        if span is None:
            block = f"[{table}]\n{line}\n\n"
            tools = re.search(r"^\[tool\.", text, re.M)
            if table == "project.urls" and tools:
                text = text[: tools.start()] + block + text[tools.start() :]
            else:
                text = text.rstrip("\n") + "\n\n" + block.rstrip("\n") + "\n"
            continue
        body = text[span[0] : span[1]]
        if re.search(rf"^{re.escape(key)}\s*=", body, re.M):
            body = re.sub(rf"^{re.escape(key)}\s*=.*$", line, body, count=1, flags=re.M)
        else:
            body = "\n" + line + body
        text = text[: span[0]] + body + text[span[1] :]
    return text


def origin_repository(cwd: Path = ROOT) -> str | None:
    """OWNER/NAME of ``git remote get-url origin`` when it is on GitHub, else None."""
    try:
        url = subprocess.run(
            ["git", "remote", "get-url", "origin"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return repository_name(url.stdout) if url.returncode == 0 and url.stdout.strip() else None


REPOSITORY, REF = published()


# --- where are we, and what does the driver support --------------------------------------------


def is_colab(environ=None, modules=None) -> bool:
    """True on Google Colab only: its kernel module and its release tag, and not Kaggle (Kaggle's
    image is built on Colab's and also sets COLAB_RELEASE_TAG)."""
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    kaggle = any(key.startswith("KAGGLE_") for key in environ)
    return "google.colab" in modules and "COLAB_RELEASE_TAG" in environ and not kaggle


def driver_cuda_version(names=("libcuda.so.1", "libcuda.so")) -> tuple[int, int] | None:
    """The newest CUDA version the installed NVIDIA driver supports, e.g. (12, 4); None when there is
    no driver. ``cuDriverGetVersion`` needs no ``cuInit`` and no GPU context."""
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) != 0 or version.value <= 0:
            return None
        return version.value // 1000, (version.value % 1000) // 10
    return None


def gpu_count(names=("libcuda.so.1", "libcuda.so")) -> int:
    """How many GPUs the driver reports (0 without a driver or a GPU)."""
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        count = ctypes.c_int(0)
        if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    return 0


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
    driver, gpus, installed = driver_cuda_version(), gpu_count(), _installed()
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
# The course bundle (``python -m gpu_utils.colab bundle``, gpu_utils/authoring/colab_bundle.py) is a zip of
# one folder with COURSE_MARKER at its top. The install cell mounts Drive, finds that marker (or a
# zip holding it) with a bounded search (_drive_block), and runs this file's ``drive`` command, which
# picks the one course, copies or unpacks it to local disk and installs it with the plan above.

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


def project_version(text: str | None = None) -> str | None:
    """``[project] version`` of pyproject.toml: the version a bundle and a notebook belong to."""
    if text is None:
        try:
            text = PYPROJECT.read_text()
        except OSError:
            return None
    return _value(text, "project", "version")


VERSION = project_version()


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


# --- badges, metadata and the install block, from pyproject.toml ----------------------------------


def colab_url(relpath: str, repository: str | None = None, ref: str | None = None) -> str:
    """The address that opens ``relpath`` of the published course in Colab."""
    repository, ref = repository or REPOSITORY, ref or REF
    if repository is None or ref is None:
        raise ValueError(f"the course is not published yet: {PENDING}")
    return f"https://colab.research.google.com/github/{repository}/blob/{ref}/{relpath}"


def badge(relpath: str) -> str:
    """The first cell's markdown: the "Open in Colab" badge for the notebook at ``relpath``, or,
    until the course is published, a sentence saying that the link will come."""
    if REPOSITORY is None:
        return f"*{PENDING} Until then, {DRIVE_HINT}*"
    return f"[![Open In Colab]({COLAB_BADGE_SVG})]({colab_url(relpath)})"


_DETECT = (
    "import os\n"
    "import sys\n"
    "\n"
    'ON_COLAB = "google.colab" in sys.modules and "COLAB_RELEASE_TAG" in os.environ\n'
    'ON_COLAB = ON_COLAB and not any(k.startswith("KAGGLE_") for k in os.environ)\n'
)
SETUP_FAILED = (
    "The course's set-up did not finish (see the messages above). Run this cell again; if it "
    "fails again: Runtime > Disconnect and delete runtime, then run the notebook from the top."
)


#: The exception the install block stops with: a RuntimeError that IPython shows as its message
#: alone (IPython calls ``_render_traceback_`` instead of printing a traceback), so a learner on
#: Colab sees what to do, and "Run all" still stops there.
_STOP_CLASS = (
    "\n"
    "    class SetUpStop(RuntimeError):  # IPython shows its message alone, without a traceback\n"
    "        def _render_traceback_(self):\n"
    "            return [str(self)]\n"
    "\n"
)


def _drive_block(content: str = "/content", depth: int = 4, entries: int = 5000) -> str:
    """The install block before publication: the course from the learner's Google Drive. The
    search is breadth first and bounded (``depth`` folders below My Drive, ``entries`` names in
    all, folders of 1,000 names or more not entered), so it takes seconds even on a full Drive."""
    marker, stop = f"{content}/{os.path.basename(MARKER)}", f"{content}/{STOP_NAME}"
    pointer, boot = f"{content}/{PROGRESS_POINTER}", f"{content}/{BOOT_NAME}"
    return (
        f"{BLOCK_HEADER}\n{_DETECT}"
        f'if ON_COLAB and not os.path.exists("{marker}"):\n'
        f"{_STOP_CLASS}"
        '    # Not published yet: the course comes from your Google Drive (README, "Colab").\n'
        "    import json\n"
        "    import zipfile\n"
        "\n"
        "    from google.colab import drive\n"
        "\n"
        "    try:\n"
        f'        drive.mount("{content}/drive")\n'
        "    except Exception as error:  # no consent given, or the mount timed out\n"
        "        raise SetUpStop(\n"
        f'            f"{DRIVE_FAILED} ({{error}})"\n'
        "        ) from None\n"
        f'    found, queue, budget = [], [("{content}/drive/MyDrive", 0)], {entries}\n'
        f"    while queue and budget > 0:  # breadth first, bounded: seconds, not minutes\n"
        "        folder, depth = queue.pop(0)\n"
        "        try:\n"
        '            entries = [e for e in os.scandir(folder) if not e.name.startswith(".")]\n'
        "        except OSError:\n"
        "            continue\n"
        "        budget -= len(entries)\n"
        f'        if any(entry.name == "{COURSE_MARKER}" for entry in entries):\n'
        "            found.append(folder)\n"
        "            continue\n"
        "        for entry in sorted(entries, key=lambda entry: entry.name):\n"
        '            if entry.name.startswith("gpu-course") and entry.name.endswith(".zip"):\n'
        "                found.append(entry.path)\n"
        f"            elif depth < {depth} and len(entries) < 1000 and entry.is_dir():\n"
        "                queue.append((entry.path, depth + 1))\n"
        "    code = None\n"
        "    for path in found:  # this file's runner, from the first copy that has one\n"
        "        try:\n"
        "            if os.path.isdir(path):\n"
        '                with open(os.path.join(path, "gpu_utils", "colab.py"), "rb") as file:\n'
        "                    code = file.read()\n"
        "            else:\n"
        "                with zipfile.ZipFile(path) as archive:\n"
        "                    names = [n for n in archive.namelist()"
        ' if n.endswith("gpu_utils/colab.py")]\n'
        "                    code = archive.read(names[0])\n"
        "            break\n"
        "        except (OSError, IndexError, zipfile.BadZipFile):\n"
        "            continue\n"
        "    if code is None:\n"
        "        raise SetUpStop(\n"
        f'            "{NO_COURSE}"\n'
        "        )\n"
        f'    with open("{content}/{FOUND_NAME}", "w") as file:\n'
        "        json.dump(found, file)\n"
        f'    with open("{boot}", "wb") as file:\n'
        "        file.write(code)\n"
        f"    %run {boot} drive --version {VERSION} --content {content}\n"
        "    # %run does not stop on errors: stop here, before `import gpu_utils` fails obscurely.\n"
        f'    if not os.path.exists("{marker}"):\n'
        f'        why = "{SETUP_FAILED}"\n'
        f'        if os.path.exists("{stop}"):\n'
        f'            with open("{stop}") as file:\n'
        "                why = file.read()\n"
        "        raise SetUpStop(why)\n"
        "# Your progress is kept in Google Drive, beside the course.\n"
        f'if ON_COLAB and os.path.exists("{pointer}"):\n'
        f'    with open("{pointer}") as file:\n'
        '        os.environ["GPU_COURSE_PROGRESS"] = file.read()\n'
    )


def install_block() -> str:
    """The lines the first code cell starts with (they do something only on Colab). Formatted as
    ``ruff format`` would, so that notebooks stay lint-clean."""
    if REPOSITORY is None or REF is None:
        return _drive_block()
    check_publication(REPOSITORY, REF)
    done = f"{CLONE_DIR}/{CLONE_DONE.format(ref=REF)}"
    clone = (
        f"rm -rf {CLONE_DIR} && git clone -q --depth 1 -b {REF} "
        f"https://github.com/{REPOSITORY} {CLONE_DIR} && touch {done}"
    )
    return (
        f"{BLOCK_HEADER}\n{_DETECT}"
        f'if ON_COLAB and not os.path.exists("{MARKER}"):\n'
        f"{_STOP_CLASS}"
        f"    # No finished clone of {REF} yet (none, or an interrupted one): clone it afresh.\n"
        f'    if not os.path.exists("{done}"):\n'
        f"        !{clone}\n"
        f"    %run {CLONE_DIR}/gpu_utils/colab.py install --ref {REF}\n"
        "    # %run does not stop on errors: stop here, before `import gpu_utils` fails obscurely.\n"
        f'    if not os.path.exists("{MARKER}"):\n'
        "        raise SetUpStop(\n"
        f'            "{SETUP_FAILED}"\n'
        "        )\n"
    )


GPU_METADATA = {"accelerator": "GPU", "colab": {"gpuType": "T4"}}


def _first_code_cell(nb):
    return next((c for c in nb.cells if c.cell_type == "code"), None)


def _strip_block(source: str) -> str:
    if not source.startswith(BLOCK_HEADER):
        return source
    lines = source.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.startswith("import gpu_utils"):
            return "".join(lines[index:])
    return ""


def is_badge_cell(cell) -> bool:
    """The first cell that :func:`synced` writes: a badge, or the sentence saying one will come."""
    return cell.cell_type == "markdown" and (
        COLAB_BADGE_SVG in cell.source or PENDING in cell.source
    )


def synced(nb, relpath: str):
    """The notebook with its badge, GPU metadata and install block as pyproject.toml says."""
    import copy

    import nbformat

    nb = copy.deepcopy(nb)
    if nb.cells and is_badge_cell(nb.cells[0]):
        nb.cells[0].source = badge(relpath)
    else:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(badge(relpath)))
        nb.cells[0].pop("id", None)
        if nb.nbformat_minor >= 5:
            nb.cells[0]["id"] = "open-in-colab"
    nb.metadata["accelerator"] = GPU_METADATA["accelerator"]
    nb.metadata["colab"] = {**nb.metadata.get("colab", {}), **GPU_METADATA["colab"]}
    cell = _first_code_cell(nb)
    if cell is not None:
        cell.source = install_block() + _strip_block(cell.source)
    return nb


def _relpath(path: Path, root: Path = ROOT) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix()


def _default_paths(root: Path = ROOT) -> list[Path]:
    return sorted((root / "notebooks").glob("*.ipynb")) + sorted(
        (root / "solutions").glob("*.ipynb")
    )


def stale(paths: list[Path] | None = None, root: Path = ROOT) -> list[str]:
    """Notebooks (and labs of the given solutions) whose badge, metadata or block is out of step."""
    import nbformat

    from .authoring import labgen

    problems = []
    for path in [p.resolve() for p in paths or _default_paths(root)]:
        nb = nbformat.read(path, as_version=4)
        if nbformat.writes(synced(nb, _relpath(path, root))) != nbformat.writes(nb):
            problems.append(_relpath(path, root))
        if path.parent.name == "solutions":
            lab = root / "labs" / path.name
            fresh = nbformat.writes(labgen.generate(path, root)).rstrip("\n")
            if not lab.exists() or lab.read_text().rstrip("\n") != fresh:
                problems.append(
                    _relpath(lab, root) if lab.exists() else f"labs/{path.name} (missing)"
                )
    return problems


def sync(paths: list[Path] | None = None, root: Path = ROOT) -> list[str]:
    """Rewrite badges, metadata and install blocks; regenerate the labs of the solutions given.
    Returns what was written. Only the first cells and metadata change: outputs stay."""
    import nbformat

    from .authoring import labgen

    written = []
    for path in [p.resolve() for p in paths or _default_paths(root)]:
        nb = nbformat.read(path, as_version=4)
        new = synced(nb, _relpath(path, root))
        if nbformat.writes(new) != nbformat.writes(nb):
            nbformat.write(new, path)
            written.append(_relpath(path, root))
        if path.parent.name == "solutions":
            lab = root / "labs" / path.name
            if lab.exists() and labgen.is_edited(nbformat.read(lab, as_version=4)):
                print(
                    f"skipped {_relpath(lab, root)}: it has edits (regenerate with "
                    "`make labs FORCE=1`)"
                )
                continue
            fresh = labgen.generate(path, root)
            if not lab.exists() or lab.read_text().rstrip("\n") != nbformat.writes(fresh).rstrip(
                "\n"
            ):
                lab.parent.mkdir(exist_ok=True)
                nbformat.write(fresh, lab)
                written.append(_relpath(lab, root))
    return written


README = ROOT / "README.md"
_ROW = re.compile(r"^\| (\d\d[a-z]?) \| \[[^]]+\]\((notebooks/[^)]+\.ipynb)\)")
README_PENDING = "[from Drive](#colab) until published"
_OLD_PENDING = ("once published",)  # what earlier versions wrote there: replaced, not repeated


def readme_cell(row: str) -> str:
    """The README table's Colab cell for one chapter row: a badge for the chapter, links for its
    lab and solution (when the row lists them); until the course is published, a link to the
    README's Colab section, which says how to use the course from Google Drive."""
    if REPOSITORY is None:
        return README_PENDING
    chapter = _ROW.match(row).group(2)
    parts = [f"[![Open In Colab]({COLAB_BADGE_SVG})]({colab_url(chapter)})"]
    for kind in ("labs", "solutions"):
        found = re.search(rf"\(({kind}/[^)]+\.ipynb)\)", row)
        if found:
            parts.append(f"[{kind[:-1]}]({colab_url(found.group(1))})")
    return " ".join(parts)


def synced_readme(text: str) -> str:
    """README with a Colab column in the chapter table, rebuilt from pyproject.toml."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        cells = line.rstrip().rstrip("|").split(" | ")
        if line.startswith("| # | Chapter |"):
            lines[index] = line if "| Colab |" in line else line.rstrip() + " Colab |"
        elif line.startswith("|---|") and index and lines[index - 1].startswith("| # | Chapter |"):
            columns = lines[index - 1].count("|") - 1
            lines[index] = "|" + "---|" * columns
        elif _ROW.match(line):
            last = cells[-1].strip()
            if "colab.research.google.com" in last or last in (README_PENDING, *_OLD_PENDING):
                cells = cells[:-1]
            lines[index] = " | ".join(cells).rstrip() + f" | {readme_cell(line)} |"
    return "\n".join(lines) + "\n"


def publish(repository: str | None, ref: str, pyproject: Path = PYPROJECT) -> tuple[str, str]:
    """Record where the course is published (``repository`` defaults to the origin remote) in
    pyproject.toml, and make this module use it. Returns (OWNER/NAME, TAG)."""
    global REPOSITORY, REF
    repository = repository or origin_repository(pyproject.parent)
    if repository is None:
        raise ValueError(
            "no --repository given and `git remote get-url origin` names no GitHub repository: "
            "give --repository OWNER/NAME."
        )
    pyproject.write_text(with_publication(pyproject.read_text(), repository, ref))
    REPOSITORY, REF = published(pyproject.read_text())
    return repository, ref


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gpu_utils.colab", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    sync_cmd = commands.add_parser("sync", help="rewrite badges, GPU metadata, install blocks")
    sync_cmd.add_argument("paths", nargs="*", type=Path, help="default: notebooks/ and solutions/")
    sync_cmd.add_argument("--check", action="store_true", help="only list what is out of step")
    sync_cmd.add_argument(
        "--repository", help="publish: OWNER/NAME on GitHub (default: the origin remote)"
    )
    sync_cmd.add_argument("--ref", help="publish: the release tag the notebooks will clone")
    install_cmd = commands.add_parser("install", help="Colab only: install the course here")
    install_cmd.add_argument("--ref", help="the release tag the clone was made from")
    drive_cmd = commands.add_parser("drive", help="Colab only: install the course found in Drive")
    drive_cmd.add_argument("--version", required=True, help="the course version of the notebook")
    drive_cmd.add_argument("--content", default="/content", help="Colab's local disk")
    bundle_cmd = commands.add_parser("bundle", help="write the course's zip for Google Drive")
    bundle_cmd.add_argument("--out", type=Path, required=True, help="the folder to write it in")
    commands.add_parser("lock", help="print the requirements file for this machine's driver")
    commands.add_parser("cuda", help="print the CUDA version the driver supports, or 'none'")
    args = parser.parse_args(argv)
    if args.command == "install":
        return install(ref=args.ref)
    if args.command == "drive":  # run by the install cell's %run: the cell reads the outcome from
        drive_install(args.version, args.content)  # the marker or the stop file, so exit 0 (a
        return 0  # non-zero exit would make %run print "SystemExit: 1" above the cell's message)
    if args.command == "bundle":
        from gpu_utils.authoring import colab_bundle

        try:
            written = colab_bundle.bundle(args.out)
        except ValueError as error:
            parser.error(str(error))
        print(f"wrote {written}")
        return 0
    if args.command == "lock":
        print(lock_for(driver_cuda_version()))
        return 0
    if args.command == "cuda":
        driver = driver_cuda_version()
        print(f"{driver[0]}.{driver[1]}" if driver else "none")
        return 0
    if args.repository and not args.ref:
        parser.error("--repository needs --ref TAG: the notebooks clone exactly that release")
    if args.ref:
        if args.check:
            parser.error("--check compares with pyproject.toml; publish without --check")
        try:
            repository, ref = publish(args.repository, args.ref)
        except ValueError as error:
            parser.error(str(error))
        print(f"pyproject.toml: the course is published at github.com/{repository}, tag {ref}")
    readme_stale = README.read_text() != synced_readme(README.read_text())
    if args.check:
        problems = stale(args.paths) + (["README.md"] if readme_stale else [])
        for problem in problems:
            print(f"{problem}: out of step; run `python -m gpu_utils.colab sync`", file=sys.stderr)
        return 1 if problems else 0
    for written in sync(args.paths):
        print(f"wrote {written}")
    if readme_stale:
        README.write_text(synced_readme(README.read_text()))
        print("wrote README.md")
    if args.ref:
        print(
            f"Next: commit, then `git tag {args.ref} && git push origin HEAD {args.ref}` (the "
            "badges open, and the install cells clone, that tag)."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
