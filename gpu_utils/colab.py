"""Where the course runs besides ``make lab``: Colab, and which CUDA set a driver needs (chapter 00,
"Running the course elsewhere").

- The repository's location is set here, once (``REPOSITORY``, ``BRANCH``);
  ``python -m gpu_utils.colab sync`` rewrites every notebook's "Open in Colab" badge, GPU-runtime
  metadata and Colab install block from it (``--check`` lists notebooks that are out of step).
- ``driver_cuda_version()`` asks the CUDA driver (``cuDriverGetVersion`` through ctypes, no numba)
  which CUDA version it supports; ``lock_for()`` names the pinned set that matches: CUDA 12 drivers
  (Colab's 550 series, driver < 580) get ``requirements/course-cu12.txt``, CUDA 13 drivers and
  machines without a GPU get ``requirements/course.txt``. The Makefile calls this file as a script.
- On Colab, the first code cell of every notebook clones the course and runs this file
  (``%run .../colab.py install``): it installs ``gpu_utils`` and the CUDA packages that match the
  driver, keeps Colab's own torch, cupy and numpy (pip constraints on their installed versions),
  and leaves a marker file so it runs once per runtime.

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

#: The one place that says where the course lives (owner/name on GitHub) and which branch.
REPOSITORY = "gpu-course/gpus-for-ml"
BRANCH = "main"

CLONE_DIR = "/content/gpu-course"  # where the install cell clones the course on Colab
MARKER = "/content/.gpu-course-installed"  # written after a successful install: once per runtime
ROOT = Path(__file__).resolve().parent.parent
COLAB_BADGE_SVG = "https://colab.research.google.com/assets/colab-badge.svg"
BLOCK_HEADER = "# Colab only: install the course once per runtime (nothing happens anywhere else)."
KEPT = ("torch", "numpy", "cupy-cuda12x", "cupy-cuda13x")  # Colab's own builds are never replaced
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

    def pip_args(self, constraints_file: str) -> list[str]:
        args = ["install", "--quiet", *self.packages]
        return args + (["--constraint", constraints_file] if self.constraints else [])


def _locked(lock_text: str) -> dict[str, str]:
    pins = {}
    for line in lock_text.splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            pins[re.sub(r"\[.*\]", "", name).strip().lower()] = version.strip()
    return pins


def plan(
    driver: tuple[int, int] | None, gpus: int, installed: dict[str, str], lock_text: str = ""
) -> Plan:
    """Decide the Colab install for a driver (None: CPU runtime), the GPU count and the packages
    already installed (name -> version). Pure: tested without network."""
    major = cuda_major(driver) if gpus else None
    pins = _locked(lock_text)
    keep = {name: installed[name] for name in KEPT if name in installed}
    extra = f"[cu{major}]" if major else ""
    version = f"=={pins['numba-cuda']}" if "numba-cuda" in pins else ""
    packages = [f"numba-cuda{extra}{version}"]
    if "cloudpickle" not in installed:
        packages.append("cloudpickle")
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
        elif other in installed:
            messages.append(
                f"Colab's {other} does not match this CUDA {major} driver; the course uses NumPy "
                "where it would use CuPy (Colab's CuPy is left as it is)."
            )
        messages.append(
            f"Installed the course for CUDA {major} (driver supports CUDA "
            f"{driver[0]}.{driver[1]}); Colab's torch, cupy and numpy are unchanged."
        )
    return Plan(major, packages, keep, messages)


def _installed() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            found[re.sub(r"[-_.]+", "-", name).lower()] = dist.version
    return found


def install(clone: str = CLONE_DIR, marker: str = MARKER) -> int:
    """Colab only: install the course from ``clone`` for this runtime; quiet; once (marker)."""
    if not is_colab():
        return 0
    if os.path.exists(marker):
        return 0
    lock = Path(clone, lock_for(driver_cuda_version()))
    decided = plan(
        driver_cuda_version(),
        gpu_count(),
        _installed(),
        lock.read_text() if lock.exists() else "",
    )
    pip = [sys.executable, "-m", "pip"]
    constraints = os.path.join(os.path.dirname(marker), ".gpu-course-constraints.txt")
    Path(constraints).write_text("".join(f"{n}=={v}\n" for n, v in decided.constraints.items()))
    done = subprocess.run([*pip, *decided.pip_args(constraints)], capture_output=True, text=True)
    if done.returncode != 0:  # the pinned numba-cuda does not fit Colab's packages: let pip pick
        decided.packages[0] = decided.packages[0].split("==")[0]
        done = subprocess.run(
            [*pip, *decided.pip_args(constraints)], capture_output=True, text=True
        )
    if done.returncode == 0:
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
    Path(marker).write_text(json.dumps({"cuda": decided.cuda, "packages": decided.packages}))
    print("\n".join(decided.messages))
    return 0


# --- badges, metadata and the install block, from REPOSITORY ------------------------------------


def colab_url(relpath: str, repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    return f"https://colab.research.google.com/github/{repository}/blob/{branch}/{relpath}"


def badge(relpath: str) -> str:
    """The markdown of the "Open in Colab" badge for the notebook at ``relpath``."""
    return f"[![Open In Colab]({COLAB_BADGE_SVG})]({colab_url(relpath)})"


def install_block() -> str:
    """The lines the first code cell starts with (they run only on Colab)."""
    url = f"https://github.com/{REPOSITORY}"
    return (
        f"{BLOCK_HEADER}\n"
        "import os\n"
        "import sys\n"
        "\n"
        'ON_COLAB = "google.colab" in sys.modules and "COLAB_RELEASE_TAG" in os.environ\n'
        'ON_COLAB = ON_COLAB and not any(k.startswith("KAGGLE_") for k in os.environ)\n'
        f'if ON_COLAB and not os.path.exists("{MARKER}"):\n'
        f"    ![ -d {CLONE_DIR} ] || git clone -q --depth 1 -b {BRANCH} {url} {CLONE_DIR}\n"
        f"    %run {CLONE_DIR}/gpu_utils/colab.py install\n"
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


def _is_badge(cell) -> bool:
    return cell.cell_type == "markdown" and COLAB_BADGE_SVG in cell.source


def point_badge_at(nb, relpath: str) -> None:
    """Make the badge cell (if any) open ``relpath``: labs inherit their solution's badge."""
    for cell in nb.cells[:1]:
        if _is_badge(cell):
            cell.source = badge(relpath)


def synced(nb, relpath: str):
    """The notebook with its badge, GPU metadata and install block as ``REPOSITORY`` says."""
    import copy

    import nbformat

    nb = copy.deepcopy(nb)
    if nb.cells and _is_badge(nb.cells[0]):
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


def _relpath(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def _default_paths() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(
        (ROOT / "solutions").glob("*.ipynb")
    )


def stale(paths: list[Path] | None = None) -> list[str]:
    """Notebooks (and labs of the given solutions) whose badge, metadata or block is out of step."""
    import nbformat

    from . import labgen

    problems = []
    for path in [p.resolve() for p in paths or _default_paths()]:
        nb = nbformat.read(path, as_version=4)
        if nbformat.writes(synced(nb, _relpath(path))) != nbformat.writes(nb):
            problems.append(_relpath(path))
        if path.parent.name == "solutions":
            lab = ROOT / "labs" / path.name
            fresh = nbformat.writes(labgen.generate(path)).rstrip("\n")
            if not lab.exists() or lab.read_text().rstrip("\n") != fresh:
                problems.append(_relpath(lab) if lab.exists() else f"labs/{path.name} (missing)")
    return problems


def sync(paths: list[Path] | None = None) -> list[str]:
    """Rewrite badges, metadata and install blocks; regenerate the labs of the solutions given.
    Returns what was written. Only the first cells and metadata change: outputs stay."""
    import nbformat

    from . import labgen

    written = []
    for path in [p.resolve() for p in paths or _default_paths()]:
        nb = nbformat.read(path, as_version=4)
        new = synced(nb, _relpath(path))
        if nbformat.writes(new) != nbformat.writes(nb):
            nbformat.write(new, path)
            written.append(_relpath(path))
        if path.parent.name == "solutions":
            lab = ROOT / "labs" / path.name
            if lab.exists() and labgen.is_edited(nbformat.read(lab, as_version=4)):
                print(
                    f"skipped {_relpath(lab)}: it has edits (regenerate with `make labs FORCE=1`)"
                )
                continue
            fresh = labgen.generate(path)
            if not lab.exists() or lab.read_text().rstrip("\n") != nbformat.writes(fresh).rstrip(
                "\n"
            ):
                nbformat.write(fresh, lab)
                written.append(_relpath(lab))
    return written


README = ROOT / "README.md"
_ROW = re.compile(r"^\| (\d\d) \| \[[^]]+\]\((notebooks/[^)]+\.ipynb)\)")


def readme_cell(row: str) -> str:
    """The README table's Colab cell for one chapter row: a badge for the chapter, links for its
    lab and solution (when the row lists them)."""
    chapter = _ROW.match(row).group(2)
    parts = [f"[![Open In Colab]({COLAB_BADGE_SVG})]({colab_url(chapter)})"]
    for kind in ("labs", "solutions"):
        found = re.search(rf"\(({kind}/[^)]+\.ipynb)\)", row)
        if found:
            parts.append(f"[{kind[:-1]}]({colab_url(found.group(1))})")
    return " ".join(parts)


def synced_readme(text: str) -> str:
    """README with a Colab column in the chapter table, rebuilt from ``REPOSITORY``."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        cells = line.rstrip().rstrip("|").split(" | ")
        if line.startswith("| # | Chapter |"):
            lines[index] = line if "| Colab |" in line else line.rstrip() + " Colab |"
        elif line.startswith("|---|") and index and lines[index - 1].startswith("| # | Chapter |"):
            columns = lines[index - 1].count("|") - 1
            lines[index] = "|" + "---|" * columns
        elif _ROW.match(line):
            if "colab.research.google.com" in cells[-1]:
                cells = cells[:-1]
            lines[index] = " | ".join(cells).rstrip() + f" | {readme_cell(line)} |"
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gpu_utils.colab", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    sync_cmd = commands.add_parser("sync", help="rewrite badges, GPU metadata, install blocks")
    sync_cmd.add_argument("paths", nargs="*", type=Path, help="default: notebooks/ and solutions/")
    sync_cmd.add_argument("--check", action="store_true", help="only list what is out of step")
    commands.add_parser("install", help="Colab only: install the course for this runtime")
    commands.add_parser("lock", help="print the requirements file for this machine's driver")
    commands.add_parser("cuda", help="print the CUDA version the driver supports, or 'none'")
    args = parser.parse_args(argv)
    if args.command == "install":
        return install()
    if args.command == "lock":
        print(lock_for(driver_cuda_version()))
        return 0
    if args.command == "cuda":
        driver = driver_cuda_version()
        print(f"{driver[0]}.{driver[1]}" if driver else "none")
        return 0
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
