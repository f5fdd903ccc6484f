"""CI tiers: the course under the package sets learners really have (`make test-cu12`,
`make test-colab`). Standard library only: it runs before any virtual environment exists.

    python3 requirements/tiers.py python 3.13   # path of a Python 3.13 interpreter, or a clear error
    python3 requirements/tiers.py colab SET CELL  # Colab's pins, then what the install cell adds

The Colab tier's pins come from the newest dated copy of Colab's package list
(requirements/colab/backend-info-*.txt, a pip freeze of Colab's GPU runtime): Colab's own numpy,
numba, torch, triton and the libraries the notebooks import, at Colab's versions (a local version
such as torch's +cu128 dropped: PyPI has no such build), plus numba-cuda as the course's install
cell installs it on a CUDA 12 runtime (numba-cuda[cu12] at the CUDA 12 lock's pin,
gpu_utils/colab.py plan()). Updating Colab's list is the one step; this file follows it. The test
harness (pytest, nbval, nbclient, ipykernel) is not Colab's: Colab's notebook front end is its own.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: What the Colab tier takes at Colab's version: the libraries the course and its notebooks import.
COLAB_PINNED = (
    "numpy",
    "numba",
    "torch",
    "triton",
    "matplotlib",
    "ipywidgets",
    "tqdm",
    "cloudpickle",
    "cupy-cuda12x",
)


def _version(executable: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [executable, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
        return (int(out[0]), int(out[1])) if len(out) == 2 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def find_python(wanted: str) -> str:
    """A working interpreter of Python ``wanted`` ("3.13"): pythonX.Y on PATH, then pyenv's newest
    X.Y.* (PYENV_ROOT, `pyenv root`, ~/.pyenv). Raises LookupError saying how to get one."""
    major, minor = (int(part) for part in wanted.split("."))
    candidates = []
    found = shutil.which(f"python{wanted}")
    if found and "/shims/" not in found:  # a pyenv shim fails when the version is not installed
        candidates.append(found)
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv")]
    if shutil.which("pyenv"):
        roots.insert(0, subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout)
    for root in filter(None, (r.strip() if r else r for r in roots)):
        pattern = os.path.join(root, "versions", f"{wanted}.*", "bin", "python")
        by_patch = sorted(glob.glob(pattern), key=lambda p: [int(n) for n in re.findall(r"\d+", p)])
        candidates.extend(reversed(by_patch))
    for candidate in candidates:
        if _version(candidate) == (major, minor):
            return candidate
    raise LookupError(
        f"No Python {wanted} found (looked for python{wanted} on PATH and in pyenv's versions/). "
        f"Install it, e.g. `pyenv install {wanted}`, or pass PYTHON{wanted.replace('.', '')}=/path"
        f"/to/python{wanted} to make."
    )


def _pins(path: Path) -> dict[str, str]:
    """name -> version of a pip-freeze file's ``name==version`` lines (names normalised)."""
    pins = {}
    for line in path.read_text().splitlines():
        found = re.match(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?==([^\s;#]+)", line.strip())
        if found:
            pins[re.sub(r"[-_.]+", "-", found.group(1)).lower()] = found.group(3)
    return pins


def colab_list(folder: Path = HERE / "colab") -> Path:
    """The newest dated copy of Colab's package list."""
    found = sorted(folder.glob("backend-info-*.txt"))
    if not found:
        raise LookupError(
            f"No Colab package list ({folder}/backend-info-DATE.txt) to test against."
        )
    return found[-1]


def colab_requirements(freeze: Path, cu12_lock: Path = HERE / "course-cu12.txt") -> list[str]:
    colab = _pins(freeze)
    missing = [name for name in COLAB_PINNED if name not in colab]
    if missing:
        raise LookupError(f"{freeze.name} lists no {', '.join(missing)}: which version to test?")
    lines = [f"# The Colab tier, from {freeze.name} (requirements/tiers.py writes this file)."]
    lines += [f"{name}=={colab[name].split('+')[0]}" for name in COLAB_PINNED]
    return [*lines, "setuptools"]  # builds the editable gpu_utils install


def install_cell_requirements(cu12_lock: Path = HERE / "course-cu12.txt") -> list[str]:
    """What the course's install cell then installs on a CUDA 12 runtime (gpu_utils/colab.py
    plan()): the CUDA 12 lock's numba-cuda, [cu12] build, in a second pip run, as on Colab. PyPI's
    torch 2.11.0 is a CUDA 13 build (Colab's +cu128 is not on PyPI), so pip reports the CUDA 12
    wheels as a conflict with it, as the install cell's conflict lines would."""
    return [f"numba-cuda[cu12]=={_pins(cu12_lock)['numba-cuda']}"]


def main(argv: list[str]) -> int:
    try:
        if len(argv) == 2 and argv[0] == "python":
            print(find_python(argv[1]))
            return 0
        if len(argv) == 3 and argv[0] == "colab":
            freeze = colab_list()
            Path(argv[1]).write_text("\n".join(colab_requirements(freeze)) + "\n")
            Path(argv[2]).write_text("\n".join(install_cell_requirements()) + "\n")
            print(f"{argv[1]}: Colab's set from requirements/colab/{freeze.name}")
            print(f"{argv[2]}: what the course's install cell adds on a CUDA 12 runtime")
            return 0
    except LookupError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
