"""The doctor (``python -m gpu_utils doctor``, ``gu.doctor()``): what this machine runs, and how
to fix each problem found.

Used in chapter 00 and for workshop preflight (``--json``). The course can run when the exit
status is 0; the simulator counts.

Besides running a test kernel, it checks a table of version pairs known to break, in every mode
(:func:`version_findings`): numba-cuda vs NumPy (NumPy 2.5 removed ``row_stack``, which
numba-cuda 0.30 registers), numba vs NumPy, the CUDA wheels vs the driver, two CuPy builds at once,
and torch's CUDA vs the driver. It also knows the package sets the course is tested under (the
CUDA 13 lock, the CUDA 12 lock, Colab's dated set: :func:`package_sets`, each run by a CI tier),
says which one this machine has, and what each set lacks that the course teaches and how the
course adapts (:data:`API_DIFFERENCES`). Each fix fits where the learner is (:func:`place`): on Colab the
exact ``pip install`` line and "restart the session"; in a clone of the course ``make lab``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import platform
import re
import sys
import types
from importlib import metadata
from pathlib import Path
from unittest import mock

from . import colab, runtime
from . import driver as cuda_driver
from .device import DeviceInfo, device_info
from .one_gpu.backends import cupy_problem, torch_device

OK, WARNING, ERROR = "ok", "warning", "error"
PACKAGES = (
    "numba",
    "numba-cuda",
    "cuda-bindings",
    "cupy-cuda13x",
    "cupy-cuda12x",
    "torch",
    "triton",
    "numpy",
    "jupyterlab",
)
#: The one command that installs the set matching the driver (the Makefile asks the driver).
REINSTALL = "rm -f .venv/.course-installed* && make lab"
# The fixes the doctor gives (also listed in instructors/FAQ.md, generated from them).
FIX_NUMBA_CUDA = (
    "run `make lab`, which installs the pinned numba-cuda with the CUDA extra that matches the "
    "driver (or pip install 'numba-cuda[cu13]', 'numba-cuda[cu12]' for a CUDA 12 driver)"
)
FIX_COLAB_GPU = colab.SWITCH_TO_GPU
FIX_KERNEL = (
    "run `make lab` to reinstall the pinned packages; if it persists, set "
    "GPU_COURSE_MODE=simulator to keep working while you fix the GPU setup"
)
FIX_KERNEL_ELSEWHERE = {
    "colab": (
        "Runtime > Disconnect and delete runtime, then run the notebook again from the top (the "
        "course's set-up installs the packages for this runtime again); if it persists, use "
        "Runtime > Change runtime type > CPU to keep working on the simulator"
    ),
    "pip": (
        "reinstall the course's tested set (`pip install -r requirements/course.txt` from a clone, "
        "or requirements/course-cu12.txt for a CUDA 12 driver); if it persists, set "
        "GPU_COURSE_MODE=simulator to keep working while you fix the GPU setup"
    ),
}
FIX_CUPY = f"run `{REINSTALL}` to install the CuPy that matches the driver's CUDA version"
FIX_TORCH = (
    f"run `{REINSTALL}`: it installs the CUDA build of torch that matches the driver "
    "(2.13.0 for CUDA 13, 2.10.0 for CUDA 12)"
)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _finding(name: str, status: str, detail: str, fix: str = "") -> dict:
    return {"name": name, "status": status, "detail": detail, "fix": fix}


def _on_colab() -> bool:
    return colab.is_colab()


def place() -> str:
    """Where the course runs: ``"colab"``, ``"clone"`` (a clone with the Makefile: ``make lab``
    works) or ``"pip"`` (the package installed some other way)."""
    if _on_colab():
        return "colab"
    root = colab.ROOT
    return "clone" if (root / "Makefile").exists() and (root / "requirements").is_dir() else "pip"


def install_fix(where: str, pip_line: str) -> str:
    """How to install ``pip_line`` (the arguments of ``pip install``) where the learner is."""
    if where == "colab":
        return (
            f"run `!pip install {pip_line}` in a cell, then Runtime > Restart session, and run the "
            "notebook again from the top"
        )
    if where == "clone":
        return f"run `{REINSTALL}`, which installs the course's tested set again"
    return (
        f"run `pip install {pip_line}` in the environment that runs the notebooks, then restart "
        "the kernel"
    )


def _release(version: str | None) -> tuple[int, int] | None:
    found = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def numba_numpy_limit() -> tuple[int, int] | None:
    """The newest NumPy (major, minor) the installed numba accepts, read from numba's own import
    check (``numpy_version > (2, 5)`` in numba/__init__.py) without importing numba."""
    try:
        spec = importlib.util.find_spec("numba")
        source = open(spec.origin).read() if spec and spec.origin else ""  # noqa: SIM115
    except (ImportError, OSError, ValueError):
        return None
    found = re.search(r"numpy_version > \((\d+), (\d+)\)", source)
    return (int(found.group(1)), int(found.group(2))) if found else None


def row_stack_state() -> str:
    """``"numpy"`` (NumPy has ``row_stack``), ``"stub"`` (the course's stand-in for numba-cuda
    0.30, see :mod:`gpu_utils.runtime`) or ``"missing"`` (neither: compiled kernels fail)."""
    import numpy

    current = getattr(numpy, "row_stack", None)
    if current is None and runtime.add_row_stack_stub():
        current = numpy.row_stack
    if current is None:
        return "missing"
    return "stub" if getattr(current, "gpu_course_stub", False) else "numpy"


def _numpy_fix(where: str, below: tuple[int, int]) -> str:
    pin = f"'numpy<{below[0]}.{below[1]}'"
    return install_fix(where, pin) + (
        f" (the course's tested set has numpy {TESTED_NUMPY})" if where != "clone" else ""
    )


#: The NumPy of the course's locks (requirements/course*.txt).
TESTED_NUMPY = "2.4.6"


def version_findings(
    versions: dict[str, str | None],
    driver: tuple[int, int] | None,
    wheels: dict[str, int],
    where: str,
    row_stack: str = "numpy",
    numpy_limit: tuple[int, int] | None = None,
    torch_triton: str | None = None,
) -> list[dict]:
    """The version table: one finding per pair known to break, whatever the mode. Pure (tested
    with made-up machines): ``versions`` maps package -> version (None: not installed)."""
    found = []
    numpy = _release(versions.get("numpy"))
    numba_cuda = _release(versions.get("numba-cuda"))
    numba = _release(versions.get("numba"))
    # numba-cuda vs numpy: numba-cuda <= 0.30 registers np.row_stack (NVIDIA/numba-cuda#907).
    name = "numba-cuda vs numpy"
    if numpy and numba_cuda and numba_cuda <= runtime.ROW_STACK_NUMBA_CUDA and numpy >= (2, 5):
        if row_stack == "missing":
            found.append(
                _finding(
                    name,
                    ERROR,
                    f"numpy {versions['numpy']} has no numpy.row_stack (removed in NumPy 2.5), "
                    f"which numba-cuda {versions['numba-cuda']} registers: every compiled kernel "
                    "fails with \"module 'numpy' has no attribute 'row_stack'\"",
                    _numpy_fix(where, (2, 5)),
                )
            )
        else:
            found.append(
                _finding(
                    name,
                    OK,
                    f"numpy {versions['numpy']} removed numpy.row_stack, which numba-cuda "
                    f"{versions['numba-cuda']} registers; the course gives it a stand-in that "
                    "only raises (gpu_utils.runtime), so kernels compile",
                )
            )
    elif numpy and numba_cuda:
        found.append(
            _finding(
                name, OK, f"numba-cuda {versions['numba-cuda']} with numpy {versions['numpy']}"
            )
        )
    # numba vs numpy: numba refuses to import with a NumPy newer than it supports.
    if numpy and numba:
        if numpy_limit and numpy > numpy_limit:
            below = (numpy_limit[0], numpy_limit[1] + 1)
            found.append(
                _finding(
                    "numba vs numpy",
                    ERROR,
                    f"numba {versions['numba']} supports NumPy up to {numpy_limit[0]}."
                    f"{numpy_limit[1]}, but numpy {versions['numpy']} is installed: numba "
                    "refuses to import",
                    _numpy_fix(where, below),
                )
            )
        else:
            found.append(
                _finding(
                    "numba vs numpy",
                    OK,
                    f"numba {versions['numba']} with numpy {versions['numpy']}",
                )
            )
    # The CUDA wheels (cuda-bindings, CuPy, torch) vs the driver.
    mismatch = cuda_mismatch(driver, wheels, where)
    if mismatch:
        found.append(mismatch)
    elif driver is None:
        found.append(
            _finding("CUDA versions", OK, "no NVIDIA driver: the CUDA wheels are not used")
        )
    else:
        built = ", ".join(f"{n} CUDA {m}" for n, m in sorted(wheels.items())) or "none"
        found.append(
            _finding(
                "CUDA versions",
                OK,
                f"the driver supports CUDA {driver[0]}.{driver[1]}; wheels built for: {built}",
            )
        )
    # Two CuPy builds share the `cupy` module: the last one installed overwrites the other's files.
    if versions.get("cupy-cuda12x") and versions.get("cupy-cuda13x"):
        keep = colab.cuda_major(driver) or 13
        drop = f"cupy-cuda{25 - keep}x"
        fix = (
            f"run `{REINSTALL}` (it removes the CuPy that does not match the driver)"
            if where == "clone"
            else f"run `{'!' if where == 'colab' else ''}pip uninstall -y {drop}` and "
            f"`{'!' if where == 'colab' else ''}pip install --force-reinstall --no-deps "
            f"cupy-cuda{keep}x=={versions[f'cupy-cuda{keep}x']}`, then "
            + ("Runtime > Restart session" if where == "colab" else "restart the kernel")
        )
        found.append(
            _finding(
                "CuPy builds",
                ERROR,
                "both cupy-cuda12x and cupy-cuda13x are installed; they share the `cupy` module "
                "and overwrite each other's files",
                fix,
            )
        )
    # torch's CUDA vs the driver (also in the CUDA wheels above; named here for torch's own fix).
    torch_cuda = wheels.get("torch")
    if versions.get("torch") and not (torch_cuda and driver and torch_cuda > driver[0]):
        built = f"CUDA {torch_cuda}" if torch_cuda else "no CUDA (a CPU build)"
        found.append(
            _finding("torch vs driver", OK, f"torch {versions['torch']}, built for {built}")
        )
    elif torch_cuda and driver:
        found.append(
            _finding(
                "torch vs driver",
                ERROR,
                f"torch {versions.get('torch')} is built for CUDA {torch_cuda}, newer than this "
                f"driver supports (CUDA {driver[0]}.{driver[1]}): it cannot use the GPU",
                FIX_TORCH
                if where == "clone"
                else install_fix(where, "'torch==2.10.0'")
                + " (torch 2.10.0's PyPI build is for CUDA 12)",
            )
        )
    # triton vs torch: torch's Linux wheels require one exact triton (chapter 12 uses it directly).
    triton = versions.get("triton")
    if torch_triton and triton and triton != torch_triton:
        found.append(
            _finding(
                "triton vs torch",
                WARNING,
                f"torch {versions.get('torch')} requires triton {torch_triton} (its wheel pins "
                f"it), but triton {triton} is installed; the course, chapter 12 included, is "
                f"tested with {torch_triton}",
                _package_fix(where, f"run `{REINSTALL}`", f"'triton=={torch_triton}'"),
            )
        )
    elif triton:
        found.append(_finding("triton vs torch", OK, f"triton {triton}"))
    return found


def torch_triton() -> str | None:
    """The exact triton the installed torch requires (its Linux wheels pin one), else None."""
    try:
        requires = metadata.requires("torch") or []
    except metadata.PackageNotFoundError:
        return None
    for requirement in requires:
        found = re.match(r"triton\s*==\s*([\w.]+)", requirement)
        if found:
            return found.group(1)
    return None


def wheel_cuda() -> dict[str, int]:
    """The CUDA major version each installed CUDA package was built for (from package metadata)."""
    found = {}
    bindings = _version("cuda-bindings")
    if bindings:
        found["cuda-bindings"] = int(bindings.split(".")[0])
    for major in (12, 13):
        if _version(f"cupy-cuda{major}x"):
            found[f"cupy-cuda{major}x"] = major
    try:
        requires = " ".join(metadata.requires("torch") or [])
    except metadata.PackageNotFoundError:
        requires = ""
    if "-cu12" in requires:
        found["torch"] = 12
    elif "-cu13" in requires or "cuda-toolkit" in requires:
        found["torch"] = 13
    return found


def cuda_mismatch(
    driver: tuple[int, int] | None, wheels: dict[str, int], where: str = "clone"
) -> dict | None:
    """A finding when packages are built for a newer CUDA than the driver supports, else None.
    Newer drivers run older CUDA builds (backward compatibility); the reverse fails to load."""
    if driver is None:
        return None
    supported = f"{driver[0]}.{driver[1]}"
    if driver[0] < 12:
        return _finding(
            "CUDA driver",
            ERROR,
            f"the NVIDIA driver supports CUDA {supported} only; the course needs CUDA 12 or 13",
            "update the NVIDIA driver (525 or newer for the CUDA 12 set, 580 or newer for CUDA "
            "13), or set GPU_COURSE_MODE=simulator to work on the simulator meanwhile",
        )
    newer = sorted(name for name, major in wheels.items() if major > driver[0])
    if not newer:
        return None
    return _finding(
        "CUDA versions",
        ERROR,
        f"the NVIDIA driver supports CUDA {supported}, but {', '.join(newer)} "
        f"{'is' if len(newer) == 1 else 'are'} built for CUDA {max(wheels[n] for n in newer)}, "
        "which this driver cannot load",
        f"install the CUDA {driver[0]} set: `{REINSTALL}` (it reads the driver and installs "
        f"{colab.lock_for(driver)}); or update the NVIDIA driver to 580 or newer"
        if where == "clone"
        else install_fix(where, f"'numba-cuda[cu{driver[0]}]{colab.NUMBA_CUDA_RANGE}'")
        + f" (the CUDA {driver[0]} build; remove packages built for a newer CUDA with "
        "`pip uninstall`)",
    )


def _smoke_kernel() -> str | None:
    """Run a tiny kernel in the current mode; None on success, else the error text."""
    try:
        from . import _smoke

        _smoke.run()
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


def _ptx_fix(driver: str | None, wheels: dict[str, int] | None = None) -> str:
    """The fix for CUDA_ERROR_UNSUPPORTED_PTX_VERSION: PTX from a newer compiler than the driver."""
    found = f" (this driver supports CUDA {driver})" if driver else ""
    wheels = wheel_cuda() if wheels is None else wheels
    built = f"CUDA {max(wheels.values())}" if wheels else "a newer CUDA"
    return (
        f"The CUDA compiler in this environment ({built}, from the installed wheels) is newer "
        f"than your NVIDIA driver supports{found}: the driver cannot load its PTX. Install the set "
        f"that matches the driver: `{REINSTALL}` (a CUDA 12 driver gets "
        "requirements/course-cu12.txt); or update the driver to version 580 or newer; or, to "
        "keep working meanwhile, set GPU_COURSE_MODE=simulator before starting JupyterLab."
    )


def _package_fix(where: str, clone_fix: str, pip_line: str) -> str:
    """``clone_fix`` in a clone of the course; elsewhere how to install ``pip_line`` there."""
    return clone_fix if where == "clone" else install_fix(where, pip_line)


FIX_NO_GPU_IN_GPU_MODE = (
    "unset GPU_COURSE_MODE (or set GPU_COURSE_MODE=simulator) to run on the simulator, or install "
    "the NVIDIA driver and check `nvidia-smi` sees the GPU"
)


#: The package sets the course is tested under: name, the file its versions are read from (a glob:
#: the newest match), its Python and the CI tier (Makefile) that runs every notebook under it.
PACKAGE_SETS = (
    ("CUDA 13 lock", "requirements/course.txt", "3.11", "make test"),
    ("CUDA 12 lock", "requirements/course-cu12.txt", "3.11", "make test-cu12"),
    ("Colab", "requirements/colab/backend-info-*.txt", "3.13", "make test-colab"),
)
#: The packages the sets are compared by (numba-cuda: what the course installs).
SET_PACKAGES = ("numpy", "numba", "numba-cuda", "torch", "triton")
_ROOT = Path(__file__).resolve().parent.parent

#: APIs the course teaches that some supported version lacks: where (torch releases measured by
#: tests/test_api_compat.py in the three tiers) and how the course adapts.
API_DIFFERENCES = {
    "FunctionEvent.input_dtypes": {
        "package": "torch",
        "missing": ("2.10", "2.11"),  # the CUDA 12 lock and Colab's torch (make test-cu12/-colab)
        "present": ("2.13",),  # the CUDA 13 lock (make test)
        "since": "torch 2.13",
        "detail": "torch.profiler's events carry no input_dtypes (lab 11's profile-first exercise "
        "reads the matmuls' dtypes from them)",
        "adapts": "lab 11 profiles with gu.capstone_profile.profile, whose add_input_dtypes "
        "copies each event's dtypes from the profiler's raw events (as torch 2.13 does itself)",
    },
}


def _release_text(version: str | None) -> str | None:
    found = _release(version)
    return f"{found[0]}.{found[1]}" if found else None


def lacks(api: str, version: str | None = None) -> bool | None:
    """Whether the installed (or given) release lacks ``api`` (a key of API_DIFFERENCES): True or
    False where that release was measured, None where it was not."""
    entry = API_DIFFERENCES[api]
    release = _release_text(version or _version(entry["package"]))
    if release in entry["missing"]:
        return True
    return False if release in entry["present"] else None


def _set_versions(name: str, pattern: str, root: Path) -> dict[str, str] | None:
    found = sorted(root.glob(pattern))
    if not found:
        return None
    pins = {k: v.split("+")[0] for k, v in colab._locked(found[-1].read_text()).items()}
    if name == "Colab":  # numba-cuda: what the install cell puts on a CUDA 12 runtime
        lock = root / "requirements/course-cu12.txt"
        if lock.exists():
            installed = {k: v for k, v in pins.items() if k != "numba-cuda"}
            plan = colab.plan((12, 8), 1, installed, lock.read_text())
            pins["numba-cuda"] = plan.packages[0].split("==")[-1]
    versions = {package: pins.get(package) for package in SET_PACKAGES}
    versions["file"] = str(found[-1].relative_to(root))
    dated = re.search(r"\d{4}-\d\d-\d\d", found[-1].name)
    versions["name"] = f"{name} {dated.group()}" if dated else name
    return versions


def package_sets(root: Path = _ROOT) -> list[dict]:
    """The tested sets with their versions and what each lacks (empty where the requirements
    files are not beside gpu_utils, e.g. a pip install without the course's files)."""
    sets = []
    for name, pattern, python, tier in PACKAGE_SETS:
        versions = _set_versions(name, pattern, root)
        if versions is None:
            continue
        gaps = [
            api
            for api, entry in API_DIFFERENCES.items()
            if _release_text(versions.get(entry["package"])) in entry["missing"]
        ]
        sets.append({"name": name, "python": python, "tier": tier, "lacks": gaps, **versions})
    return sets


def set_findings(versions: dict[str, str | None], python: str, sets: list[dict]) -> list[dict]:
    """Which tested set this machine has (or that it has none), and each API it lacks. Pure."""
    found = []
    mine = {p: (versions.get(p) or "").split("+")[0] or None for p in SET_PACKAGES}
    release = ".".join(python.split(".")[:2])
    same = [s for s in sets if s["python"] == release and all(s[p] == mine[p] for p in mine)]
    if same:
        found.append(
            _finding("package set", OK, f"the {same[0]['name']} set, tested by {same[0]['tier']}")
        )
    elif sets:
        names = ", ".join(s["name"] for s in sets)
        found.append(
            _finding(
                "package set",
                OK,
                f"Python {release} with these versions is not one of the tested sets ({names}); "
                "the course may well run, but it was not tested with them",
            )
        )
    for api, entry in API_DIFFERENCES.items():
        if _release_text(versions.get(entry["package"])) in entry["missing"]:
            detail = (
                f"{entry['package']} {versions[entry['package']]} has no {api}: "
                f"{entry['detail']}; the course adapts: {entry['adapts']}"
            )
            found.append(_finding(api, OK, detail))
    return found


def _findings(info) -> list[dict]:
    found = []
    where = place()
    major = colab.cuda_major(cuda_driver.cuda_version())
    extra = f"[cu{major}]" if major else ""
    if _version("numba-cuda") is None:
        found.append(
            _finding(
                "numba-cuda",
                ERROR,
                "numba is installed without numba-cuda, which provides numba.cuda",
                _package_fix(where, FIX_NUMBA_CUDA, f"'numba-cuda{extra}{colab.NUMBA_CUDA_RANGE}'"),
            )
        )
    else:
        found.append(_finding("numba-cuda", OK, f"numba-cuda {_version('numba-cuda')}"))
    if runtime.mode_conflict:
        found.append(_finding("import order", ERROR, runtime.mode_conflict))
    versions = {package: _version(package) for package in PACKAGES}
    table = version_findings(
        versions,
        cuda_driver.cuda_version(),
        wheel_cuda(),
        where,
        row_stack_state() if versions["numpy"] else "numpy",
        numba_numpy_limit(),
        torch_triton(),
    )
    found += table
    found += set_findings(versions, platform.python_version(), package_sets())
    if runtime.mode == "simulator" and _on_colab():
        found.append(
            _finding(
                "Colab runtime",
                WARNING,
                "this Colab session has no GPU, so kernels run on the (slow) simulator",
                FIX_COLAB_GPU,
            )
        )
    error = _smoke_kernel()
    numpy_findings = [f for f in table if f["name"].endswith("vs numpy") and f["status"] == ERROR]
    if error is None:
        found.append(_finding("kernel", OK, f"a test kernel ran in {runtime.mode} mode"))
    elif "row_stack" in error or (numpy_findings and "numpy" in error.lower()):
        # The NumPy finding names the cause and its fix; say so rather than a generic failure.
        cause = numpy_findings[0] if numpy_findings else None
        fix = cause["fix"] if cause else _numpy_fix(where, (2, 5))
        found.append(
            _finding(
                "kernel",
                ERROR,
                f"a test kernel failed in {runtime.mode} mode: {error}. Cause: this NumPy does not "
                "fit numba-cuda (see the numpy line above)",
                fix,
            )
        )
    elif "PTX" in error.upper():
        found.append(_finding("kernel", ERROR, error, _ptx_fix(info.driver_version)))
    else:
        found.append(
            _finding(
                "kernel",
                ERROR,
                f"a test kernel failed in {runtime.mode} mode: {error}",
                FIX_KERNEL if where == "clone" else FIX_KERNEL_ELSEWHERE[where],
            )
        )
    problem = cupy_problem()
    if problem is None:
        found.append(_finding("cupy", OK, "CuPy computes on the GPU"))
    else:
        status = WARNING if runtime.mode == "gpu" else OK
        fix = _package_fix(where, FIX_CUPY, f"cupy-cuda{major or 13}x") if status == WARNING else ""
        found.append(_finding("cupy", status, f"{problem}; notebooks use NumPy instead", fix))
    if runtime.mode == "gpu" and torch_device() == "cpu":
        found.append(
            _finding(
                "torch",
                WARNING,
                "PyTorch cannot see the GPU (a CPU-only build?), so its GPU comparisons are skipped",
                FIX_TORCH,
            )
        )
    return found


def diagnose() -> dict:
    """Everything the doctor knows, as plain data (what ``--json`` prints)."""
    try:
        info = device_info()
        unusable = None
    except Exception as exc:  # GPU mode forced (GPU_COURSE_MODE=gpu) where no GPU can be used
        unusable = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        info = DeviceInfo(mode="gpu", name="no usable GPU", notes=unusable)
    findings = _findings(info)
    if unusable is not None:
        findings.insert(
            0,
            _finding(
                "GPU",
                ERROR,
                f"GPU mode was chosen ({runtime.mode_reason}) but no GPU could be opened: {unusable}",
                FIX_NO_GPU_IN_GPU_MODE,
            ),
        )
    driver = cuda_driver.cuda_version()
    return {
        "ok": all(f["status"] != ERROR for f in findings),
        "mode": runtime.mode,
        "mode_reason": runtime.mode_reason,
        "driver_cuda": f"{driver[0]}.{driver[1]}" if driver else None,
        "wheels_cuda": wheel_cuda(),
        "colab": _on_colab(),
        "place": place(),
        "device": dataclasses.asdict(info) | {"summary": info.summary()},
        "versions": {"python": platform.python_version()}
        | {package: _version(package) for package in PACKAGES},
        "package_sets": package_sets(),
        "findings": findings,
    }


def render(report: dict) -> str:
    """The report as text for a terminal or a notebook cell."""
    width = max(len(k) for k in report["versions"])
    lines = [
        "GPU course doctor",
        f"  mode: {report['mode']} ({report['mode_reason']})",
        f"  device: {report['device']['summary']}",
        f"  driver supports CUDA: {report.get('driver_cuda') or 'no driver'}",
        "  versions:",
        *(f"    {k:<{width}} {v or 'not installed'}" for k, v in report["versions"].items()),
    ]
    if report.get("package_sets"):
        lines.append(f"  tested sets (python {' '.join(SET_PACKAGES)}):")
    for tested in report.get("package_sets", []):
        row = " ".join([tested["python"], *(tested[p] or "-" for p in SET_PACKAGES)])
        lines.append(f"    {tested['name']:<16} {row}  {tested['tier']}")
        lines += [f"      lacks {api}" for api in tested["lacks"]]
    for finding in report["findings"]:
        lines.append(f"[{finding['status']}] {finding['name']}: {finding['detail']}")
        if finding["fix"]:
            lines.append(f"    fix: {finding['fix']}")
    if report["ok"]:
        lines.append(f"Verdict: the course runs here ({report['mode']} mode).")
    else:
        lines.append("Verdict: fix the errors above before starting the course.")
    return "\n".join(lines)


def catalogue() -> list[tuple[str, str]]:
    """(problem, fix) for every problem the doctor knows, from the same code and texts it uses
    (instructors/FAQ.md is generated from this list, so the two cannot drift)."""
    cu13 = {"cuda-bindings": 13, "cupy-cuda13x": 13, "torch": 13}
    found = [cuda_mismatch((12, 4), cu13), cuda_mismatch((11, 8), {})]
    problems = [(f["detail"] + " (example: a CUDA 12.4 driver)", f["fix"]) for f in found[:1]]
    problems.append((found[1]["detail"] + " (example: an 11.8 driver)", found[1]["fix"]))
    problems += [
        (
            "A kernel fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (example: CUDA 13 wheels, a "
            "CUDA 12.4 driver)",
            _ptx_fix("12.4", cu13),
        ),
        ("numba is installed without numba-cuda, which provides numba.cuda", FIX_NUMBA_CUDA),
    ]
    numpy_25 = {"numpy": "2.5.2", "numba-cuda": "0.30.4", "numba": "0.68.1"}
    for where in ("clone", "colab"):
        for f in version_findings(numpy_25, None, {}, where, "missing"):
            if f["status"] == ERROR:
                problems.append(
                    (
                        f"{f['detail']} "
                        f"({'on Colab' if where == 'colab' else 'in a clone of the course'})",
                        f["fix"],
                    )
                )
    numpy_26 = {"numpy": "2.6.0", "numba": "0.68.1"}
    for f in version_findings(numpy_26, None, {}, "clone", numpy_limit=(2, 5)):
        if f["status"] == ERROR:
            problems.append((f["detail"], f["fix"]))
    mixed = {"torch": "2.13.0", "triton": "3.9.0"}
    for f in version_findings(mixed, None, {}, "clone", torch_triton="3.7.1"):
        if f["status"] != OK:
            problems.append((f["detail"], f["fix"]))
    both = {"cupy-cuda12x": "14.2.0", "cupy-cuda13x": "14.2.0"}
    for where in ("clone", "colab"):
        for f in version_findings(both, (12, 4), {}, where):
            if f["name"] == "CuPy builds":
                place_name = "on Colab" if where == "colab" else "in a clone of the course"
                problems.append((f"{f['detail']} ({place_name})", f["fix"]))
    problems += [
        ("On Colab, the session has no GPU: kernels run on the simulator", FIX_COLAB_GPU),
        ("A test kernel fails for another reason", FIX_KERNEL),
        ("In GPU mode, CuPy cannot use the GPU (notebooks use NumPy instead)", FIX_CUPY),
        ("In GPU mode, PyTorch cannot see the GPU (a CPU-only build?)", FIX_TORCH),
    ]
    fake = types.SimpleNamespace(ENABLE_CUDASIM=1)  # numba imported first, in simulator mode
    with mock.patch.dict(sys.modules, {"numba.core.config": fake}):
        conflict = runtime._numba_conflict("gpu") or ""
    what, _, fix = conflict.partition(" Fix: ")
    problems.append((what, fix))
    return problems
