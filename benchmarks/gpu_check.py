"""`make gpu-check`: the whole course re-checked on a GPU machine, offline, in one archive.

Usage, from the repository root of a machine with an NVIDIA GPU::

    make gpu-check PYTHON=python3 WHEELS=/path/to/wheels
    python3 benchmarks/gpu_check.py run --wheels /path/to/wheels     # the same
    python3 benchmarks/gpu_check.py benchmarks                        # `make benchmarks`
    python3 benchmarks/gpu_check.py download-command                  # the `pip download` line

GPU machines (clusters, a workshop's server, a cloud image) often have torch, numba-cuda and cupy
installed and no route to the package index. ``run`` uses the interpreter that runs it and the
repository on ``PYTHONPATH``; it installs nothing from the network: what is missing (the numpy
pin, pytest and its plugins, IPython for the notebooks) comes from a folder of wheels, made on
any networked machine with the line ``download-command`` prints, and goes into a private folder
(``pip install --no-index --target``), never into the machine's own environment. Then, in order:

1. the doctor (``python -m gpu_utils doctor``);
2. every benchmark script (:func:`benchmark_scripts`), one after the other so that each has the
   GPU to itself, each within its own time limit and all within ``BENCHMARKS_BUDGET_S``; they
   write their reference JSON into the run's folder, not into the repository;
3. at the same time, the GPU-mode unit tier (``pytest -n``, a per-test timeout) and every
   notebook and solution top to bottom in GPU mode (:func:`run_notebook`: IPython runs the
   cells, so ``!`` and ``%`` lines work; a cell tagged ``raises-exception`` may raise);
4. one archive, ``gpu-check-<date>.tar.gz``: ``summary.txt``/``summary.json``, every log, the
   fresh ``reference_data/*.json``.

The plan is built to finish within ``TOTAL_BUDGET_S`` (9 minutes) on one H100 with 16 cores:
every step has a wall-clock limit, and a step that runs out is stopped and reported as such.
This file uses the standard library only, so it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import datetime
import json
import os
import shlex
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOTAL_BUDGET_S = 540  # 9 minutes on one H100 with 16 cores
BENCHMARKS_BUDGET_S = 240  # `make benchmarks` within 4 minutes on an H100
PARALLEL_BUDGET_S = 240  # the unit tier and the notebooks, side by side
DOCTOR_TIMEOUT_S = 60
TEST_TIMEOUT_S = 120  # per test (pytest-timeout): a hung test names itself and the run goes on
NOTEBOOK_TIMEOUT_S = 200  # per notebook or solution

#: Seconds each benchmark script may take on an H100 before it is stopped; others get DEFAULT.
#: (First H100 run: kernels.py had not finished 60 s after its ceilings; it now has a budget of
#: its own, benchmarks/kernels.py BUDGET_S, and these limits are the scripts' own plus margin.)
BENCHMARK_TIMEOUT_S = {
    "ch01_cpu_vs_gpu": 45,
    "ch03_transfers": 20,
    "ch03_streams": 25,
    "ch04_latency": 75,
    "ch06_tensor_cores": 20,
    "ch07_cpu_vs_gpu": 25,
    "ch08_collectives": 40,
    "kernels": 75,
    "trace_vs_ncu": 40,
    "ch12_triton": 90,  # its goal: within 90 s on an H100 (chapter 12)
    "ch13_serving": 90,  # two decoders (1.1B, 7B), batch 1-256, eager and CUDA graphs
}
DEFAULT_BENCHMARK_TIMEOUT_S = 45
#: Arguments that keep a script within its limit on a single-GPU machine.
BENCHMARK_ARGS = {"ch08_collectives": ["--quick"]}
NOT_BENCHMARKS = {"checker_corpus"}  # a CPU tool (benchmarks/checker_corpus.py), not a measurement

#: What the checks need beyond the machine's torch, numba-cuda and cupy, with the course's pins
#: (requirements/course.txt, requirements/dev.txt) where it has one: import name -> requirement.
NEEDED = {
    "numpy": "numpy",  # the pin: numba-cuda 0.30.4 fails with numpy 2.5 (NVIDIA/numba-cuda#907)
    "pytest": "pytest",
    "xdist": "pytest-xdist",
    "pytest_timeout": "pytest-timeout==2.4.0",  # not in requirements/dev.txt: pinned here
    "IPython": "ipython",
    "nbformat": "nbformat",  # tests of the notebooks, labgen and the Colab cells
    "nbclient": "nbclient",  # tests/test_notebooks.py runs the labs
    "ipykernel": "ipykernel",
}
#: Test files that cannot even be collected without a module: ignored, and said so, when the
#: module is still missing after the install (playwright's tests skip themselves).
NEEDS = {
    "nbformat": ["test_colab.py", "test_instructors.py", "test_labgen.py", "test_notebooks.py"],
    "nbclient": ["test_notebooks.py"],
    "ipykernel": ["test_notebooks.py"],
}
NUMPY_BELOW = (2, 5)
WHEEL_PYTHON = "3.12"  # the GPU images the course met (the first H100 run): CPython 3.12


@dataclass
class Step:
    """One thing the check ran, and how it went."""

    name: str
    command: list[str]
    log: str
    status: str = "not run"  # "passed", "failed", "timed out", "skipped", "not run"
    seconds: float = 0.0
    detail: str = ""


@dataclass
class Plan:
    python: str
    work: Path
    wheels: Path | None
    jobs: int
    steps: list[Step] = field(default_factory=list)
    ignored_tests: list[str] = field(default_factory=list)

    @property
    def notebook_workers(self) -> int:
        """Notebooks run this many at a time, beside the unit tier's workers (half the cores
        each: two dozen notebooks of tens of seconds each, mostly compiling, in 4 minutes)."""
        return max(1, self.jobs // 2)

    @property
    def test_workers(self) -> int:
        return max(1, self.jobs - self.notebook_workers)


# --- what to run ------------------------------------------------------------------------------


def benchmark_scripts(root: Path = ROOT) -> list[Path]:
    """The benchmark scripts, in order: ``benchmarks/ch*.py`` by chapter (not the CPU tool
    ``checker_corpus.py``), then ``kernels.py`` and ``trace_vs_ncu.py``. A new chapter's script
    (``ch12_triton.py``) is picked up when it exists."""
    folder = root / "benchmarks"
    chapters = [p for p in sorted(folder.glob("ch*.py")) if p.stem not in NOT_BENCHMARKS]
    tail = [folder / name for name in ("kernels.py", "trace_vs_ncu.py")]
    return chapters + [p for p in tail if p.exists()]


def benchmark_timeout(script: Path) -> int:
    return BENCHMARK_TIMEOUT_S.get(script.stem, DEFAULT_BENCHMARK_TIMEOUT_S)


def notebooks(root: Path = ROOT) -> list[Path]:
    """Every chapter and every solution (``notebooks/*.ipynb``, ``solutions/*.ipynb``), whatever
    chapters exist (``12_triton`` included when it is there); labs/ are generated from
    solutions/ and are not run."""
    return sorted((root / "notebooks").glob("*.ipynb")) + sorted(
        (root / "solutions").glob("*.ipynb")
    )


def download_command(root: Path = ROOT, dest: str = "wheels") -> list[str]:
    """The ``pip download`` line, run on any machine with network access, that fills a wheel
    folder for ``--wheels``: CPython 3.12 wheels for Linux x86-64 of everything in
    :data:`NEEDED`, with their dependencies, at the course's pins."""
    pins = _pins(root)
    wanted = []
    for requirement in NEEDED.values():
        name = requirement.split("==")[0]
        wanted.append(requirement if "==" in requirement else f"{name}=={pins[name]}")
    return [
        "pip",
        "download",
        "--dest",
        dest,
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        WHEEL_PYTHON,
        "--abi",
        "cp" + WHEEL_PYTHON.replace(".", ""),
        "--platform",
        "manylinux_2_28_x86_64",
        "--platform",
        "manylinux_2_17_x86_64",
        *wanted,
    ]


def _pins(root: Path) -> dict[str, str]:
    pins = {}
    for name in ("course.txt", "dev.txt"):
        for line in (root / "requirements" / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if "==" in line:
                package, version = line.split("==", 1)
                pins.setdefault(package.strip().lower(), version.strip())
    return pins


# --- checking the interpreter and installing from the wheel folder ----------------------------

_PROBE = """
import importlib, json, sys
found = {}
for name in sys.argv[1:]:
    try:
        module = importlib.import_module(name)
        found[name] = getattr(module, "__version__", "")
    except Exception:
        found[name] = None
print(json.dumps(found))
"""


def missing_requirements(found: dict[str, str | None]) -> list[str]:
    """What to install, given ``{import name: version or None}`` of the interpreter: every
    module it lacks, and numpy when it is 2.5 or newer (numba-cuda 0.30.4 cannot compile with
    it)."""
    pins = _pins(ROOT)
    wanted = []
    for module, requirement in NEEDED.items():
        version = found.get(module)
        too_new = module == "numpy" and version and _version(version) >= NUMPY_BELOW
        if version is None or too_new:
            name = requirement.split("==")[0]
            pinned = requirement if "==" in requirement else f"{name}=={pins.get(name, '')}"
            wanted.append(pinned.rstrip("="))
    return wanted


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def probe(python: str, env: dict[str, str] | None = None) -> dict[str, str | None]:
    """``{import name: version, or None when it cannot be imported}`` for :data:`NEEDED`."""
    done = subprocess.run(
        [python, "-c", _PROBE, *NEEDED], capture_output=True, text=True, timeout=120, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(f"{python} could not be run: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def probe_with(python: str, site: Path) -> dict[str, str | None]:
    """:func:`probe` with ``site`` first on the path, as the checks will run."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return probe(python, env)


def ignored_tests(found: dict[str, str | None]) -> list[str]:
    """The test files to leave out because a module they import is missing (see NEEDS)."""
    return sorted(
        {f for module, files in NEEDS.items() if found.get(module) is None for f in files}
    )


def install_command(python: str, wheels: Path, site: Path, requirements: list[str]) -> list[str]:
    """pip from the wheel folder only (``--no-index``), into ``site`` (``--target``)."""
    return [
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-index",
        "--find-links",
        str(wheels),
        "--target",
        str(site),
        *requirements,
    ]


# --- the notebook runner ----------------------------------------------------------------------


def cell_verdict(tags: list[str], error: str | None) -> tuple[str, str]:
    """How one executed code cell counts: ("ok" | "expected error" | "failed" | "note", text).

    A cell tagged ``raises-exception`` may raise (its error is expected); any other error fails
    the notebook. A tagged cell that raised nothing is a note, not a failure: some mistakes the
    simulator reports (an out-of-bounds index) go unnoticed on a real GPU.
    """
    expected = "raises-exception" in tags
    if error is None:
        return ("note", "tagged raises-exception, but raised nothing") if expected else ("ok", "")
    if expected:
        return "expected error", error
    return "failed", error


def code_cells(notebook: dict) -> list[tuple[int, str, list[str]]]:
    """(index among all cells, source, tags) of each code cell of a notebook's JSON."""
    cells = []
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        cells.append((index, source, list(cell.get("metadata", {}).get("tags", []))))
    return cells


def run_notebook(path: Path) -> int:
    """Run one notebook's code cells top to bottom in this process with IPython (no Jupyter
    server or kernel needed); prints one line per cell; 0 when it passed, 1 when a cell failed.
    Called as ``gpu_check.py notebook PATH`` in a child process of its own."""
    os.environ.setdefault("MPLBACKEND", "Agg")  # plots render, nothing opens a window
    from IPython.core.interactiveshell import InteractiveShell

    notebook = json.loads(path.read_text())
    shell = InteractiveShell.instance()
    os.chdir(path.parent)  # as Jupyter does: relative paths from the notebook's folder
    sys.path.insert(0, str(path.parent))
    for index, source, tags in code_cells(notebook):
        began = time.perf_counter()
        print(f"--- cell {index} {tags or ''}", flush=True)
        result = shell.run_cell(source, store_history=False)
        failure = result.error_before_exec or result.error_in_exec
        error = None if failure is None else f"{type(failure).__name__}: {failure}"
        verdict, text = cell_verdict(tags, error)
        seconds = time.perf_counter() - began
        print(f"=== cell {index}: {verdict} ({seconds:.1f} s) {text}", flush=True)
        if verdict == "failed":
            print(f"NOTEBOOK FAILED at cell {index}: {text}", flush=True)
            return 1
    print("NOTEBOOK PASSED", flush=True)
    return 0


# --- running the steps ------------------------------------------------------------------------


def _env(plan: Plan, site: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    path = [str(p) for p in (site, ROOT) if p is not None]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env.update(
        PYTHONPATH=os.pathsep.join(path),
        GPU_COURSE_MODE="gpu",
        GPU_COURSE_PROGRESS=str(plan.work / "progress.json"),
        GPU_COURSE_REFERENCE_OUT=str(plan.work / "reference_data"),
        MPLBACKEND="Agg",
        PYTHONUNBUFFERED="1",
    )
    return env


def stop_leftovers(group: int) -> bool:
    """Kill what is left of the process group ``group`` (a step started with
    ``start_new_session``, so its id is the step's pid) once the step itself has exited: children
    that outlive it would hold the GPU, ports or memory the next step needs. True if any were."""
    try:
        os.killpg(group, 0)  # raises when no process of the group is left
    except (ProcessLookupError, PermissionError):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, 9)
    return True


def run_step(step: Step, env: dict[str, str], timeout: float, cwd: Path = ROOT) -> Step:
    """Run ``step.command`` with its output in ``step.log``, stopped after ``timeout`` s."""
    log = Path(step.log)
    log.parent.mkdir(parents=True, exist_ok=True)
    if timeout <= 0:
        step.status, step.detail = "skipped", "no time left in the budget"
        log.write_text(f"$ {shlex.join(step.command)}\nskipped: no time left in the budget\n")
        return step
    began = time.monotonic()
    with log.open("w") as out:
        out.write(f"$ {shlex.join(step.command)}\n")
        out.flush()
        process = subprocess.Popen(
            step.command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
            start_new_session=True,
        )  # fmt: skip
        try:
            code = process.wait(timeout=timeout)
            step.status = "passed" if code == 0 else "failed"
            step.detail = "" if code == 0 else f"exit code {code}"
            if stop_leftovers(process.pid):  # e.g. ranks or workers a benchmark left running
                out.write("\n[gpu-check] stopped the processes this step left running\n")
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 9)  # the script and every process it started
            process.wait()
            step.status, step.detail = "timed out", f"stopped after {timeout:.0f} s"
            out.write(f"\n[gpu-check] stopped after {timeout:.0f} s\n")
    step.seconds = time.monotonic() - began
    return step


def plan_steps(plan: Plan, only: set[str] | None = None) -> None:
    """Fill ``plan.steps``: doctor, benchmarks, unit tier, notebooks (``only`` picks groups)."""
    logs, python = plan.work / "logs", plan.python

    def want(group: str) -> bool:
        return only is None or group in only

    if want("doctor"):
        plan.steps.append(
            Step("doctor", [python, "-m", "gpu_utils", "doctor"], str(logs / "doctor.txt"))
        )
    if want("benchmarks"):
        for script in benchmark_scripts():
            command = [python, str(script), *BENCHMARK_ARGS.get(script.stem, [])]
            plan.steps.append(
                Step(f"benchmark {script.stem}", command, str(logs / f"bench_{script.stem}.log"))
            )
    if want("unit"):
        command = [
            python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE",
            "-n", str(plan.test_workers), "--dist", "loadgroup",
            "--timeout", str(TEST_TIMEOUT_S), "--durations=20", "tests",
            *(f"--ignore=tests/{name}" for name in plan.ignored_tests),
        ]  # fmt: skip
        plan.steps.append(Step("unit tier (GPU mode)", command, str(logs / "unit.log")))
    if want("notebooks"):
        for path in notebooks():
            rel = path.relative_to(ROOT)
            command = [python, str(Path(__file__).resolve()), "notebook", str(path)]
            log = logs / "notebooks" / f"{rel.parent.name}__{path.stem}.log"
            plan.steps.append(Step(f"notebook {rel}", command, str(log)))


def execute(
    plan: Plan, site: Path | None, clock=time.monotonic, began: float | None = None
) -> None:
    """Run the planned steps within the budgets: doctor, then the benchmarks one at a time,
    then the unit tier beside the notebooks (``plan.jobs`` processes in all). ``began``: when
    the check started (the install counts against the total), by default now."""
    env = _env(plan, site)
    began = clock() if began is None else began
    first = [s for s in plan.steps if s.name == "doctor"]
    benches = [s for s in plan.steps if s.name.startswith("benchmark ")]
    unit = [s for s in plan.steps if s.name.startswith("unit tier")]
    books = [s for s in plan.steps if s.name.startswith("notebook ")]
    for step in first:
        run_step(step, env, DOCTOR_TIMEOUT_S)
        _report(step)
    bench_end = clock() + BENCHMARKS_BUDGET_S
    for step in benches:
        stem = step.name.removeprefix("benchmark ")
        limit = min(BENCHMARK_TIMEOUT_S.get(stem, DEFAULT_BENCHMARK_TIMEOUT_S), bench_end - clock())
        run_step(step, env, limit)
        _report(step)
    end = min(clock() + PARALLEL_BUDGET_S, began + TOTAL_BUDGET_S - 30)  # 30 s: the archive
    notebook_workers = plan.notebook_workers if unit else plan.jobs
    with concurrent.futures.ThreadPoolExecutor(max_workers=1 + notebook_workers) as pool:
        futures = [pool.submit(run_step, s, env, end - clock()) for s in unit]
        queue = collections.deque(books)

        def next_notebook() -> None:
            while True:
                try:
                    step = queue.popleft()  # atomic: two workers never take the same one
                except IndexError:
                    return
                run_step(step, env, min(NOTEBOOK_TIMEOUT_S, end - clock()))
                _report(step)

        futures += [pool.submit(next_notebook) for _ in range(notebook_workers)]
        for future in futures:
            future.result()
    for step in unit:
        _report(step)


def _report(step: Step) -> None:
    print(f"{step.status:>9}  {step.seconds:6.1f} s  {step.name}  {step.detail}", flush=True)


# --- the archive ------------------------------------------------------------------------------


def summary(plan: Plan, started: str, seconds: float, device: str) -> dict:
    counts: dict[str, int] = {}
    for step in plan.steps:
        counts[step.status] = counts.get(step.status, 0) + 1
    return {
        "started": started,
        "seconds": round(seconds, 1),
        "device": device,
        "python": plan.python,
        "command": shlex.join(sys.argv),
        "budget_s": TOTAL_BUDGET_S,
        "within_budget": seconds <= TOTAL_BUDGET_S,
        "counts": counts,
        "steps": [asdict(step) for step in plan.steps],
    }


def summary_text(data: dict) -> str:
    lines = [
        f"gpu-check on {data['device']}, started {data['started']}, {data['seconds']:.0f} s "
        f"(budget {data['budget_s']} s: {'met' if data['within_budget'] else 'EXCEEDED'})",
        f"python: {data['python']}; command: {data['command']}",
        "counts: " + ", ".join(f"{k} {v}" for k, v in sorted(data["counts"].items())),
        "",
    ]
    for step in data["steps"]:
        lines.append(
            f"{step['status']:>9}  {step['seconds']:6.1f} s  {step['name']}  {step['detail']}"
        )
    return "\n".join(lines) + "\n"


def write_archive(work: Path, data: dict, archive: Path) -> Path:
    """``summary.json``, ``summary.txt``, ``logs/`` and ``reference_data/`` of ``work`` in one
    ``.tar.gz`` (paths inside start with the archive's name)."""
    (work / "summary.json").write_text(json.dumps(data, indent=2) + "\n")
    (work / "summary.txt").write_text(summary_text(data))
    archive.parent.mkdir(parents=True, exist_ok=True)
    top = archive.name.removesuffix(".tar.gz")
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("summary.txt", "summary.json", "logs", "reference_data"):
            if (work / name).exists():
                tar.add(work / name, arcname=f"{top}/{name}")
    return archive


# --- command line -----------------------------------------------------------------------------


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="gpu_check.py", description=__doc__.split("\n\n")[0].strip("`")
    )
    sub = parser.add_subparsers(dest="what")
    run = sub.add_parser("run", help="everything, into one archive (what `make gpu-check` does)")
    run.add_argument("--python", default=sys.executable, help="the interpreter to check with")
    run.add_argument("--wheels", type=Path, help="folder of wheels for what the machine lacks")
    run.add_argument("--work", type=Path, default=ROOT / "build" / "gpu-check")
    run.add_argument("--archive", type=Path, help="default: build/gpu-check-<date>.tar.gz")
    run.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 1))
    run.add_argument(
        "--only", nargs="+", choices=["doctor", "benchmarks", "unit", "notebooks"], default=None
    )
    run.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    bench = sub.add_parser("benchmarks", help="the benchmark scripts only (`make benchmarks`)")
    bench.add_argument("--python", default=sys.executable)
    bench.add_argument("--dry-run", action="store_true")
    sub.add_parser("download-command", help="print the pip download line for --wheels")
    book = sub.add_parser("notebook", help="run one notebook with IPython (used by `run`)")
    book.add_argument("path", type=Path)
    args = parser.parse_args(argv)
    if args.what is None:
        parser.error("say what to do: run, benchmarks, download-command or notebook")
    if args.what == "run":
        if args.jobs < 1:
            parser.error(f"--jobs {args.jobs}: at least 1")
        if args.wheels is not None and not args.wheels.is_dir():
            parser.error(
                f"--wheels {args.wheels}: no such folder. Make it on a machine with network "
                f"access: {shlex.join(download_command())}"
            )
    return args


def _device(python: str, env: dict[str, str]) -> str:
    code = "import gpu_utils as gu; print(gu.device_info().name if gu.mode == 'gpu' else 'no GPU')"
    done = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout else "?"


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.what == "download-command":
        print(shlex.join(download_command()))
        return 0
    if args.what == "notebook":
        return run_notebook(args.path.resolve())
    if args.what == "benchmarks":
        return _benchmarks_only(args.python, args.dry_run)
    return _run(args)


def _benchmarks_only(python: str, dry_run: bool) -> int:
    """`make benchmarks`: each script in turn, its output on the terminal, its JSON into
    gpu_utils/reference_data/, each within its limit and all within BENCHMARKS_BUDGET_S."""
    end, failed = time.monotonic() + BENCHMARKS_BUDGET_S, []
    for script in benchmark_scripts():
        command = [python, str(script), *BENCHMARK_ARGS.get(script.stem, [])]
        limit = min(benchmark_timeout(script), end - time.monotonic())
        print(f"$ {shlex.join(command)}   (limit {limit:.0f} s)", flush=True)
        if dry_run:
            continue
        if limit <= 0:
            failed.append(f"{script.stem} (no time left)")
            continue
        process = subprocess.Popen(command, cwd=ROOT, start_new_session=True)
        try:
            if process.wait(timeout=limit) != 0:
                failed.append(script.stem)
            stop_leftovers(process.pid)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 9)  # the script and the ranks it started
            process.wait()
            failed.append(f"{script.stem} (stopped after {limit:.0f} s)")
    if failed:
        print(f"benchmarks that failed or were stopped: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _run(args: argparse.Namespace) -> int:
    started = datetime.datetime.now(datetime.timezone.utc)
    began = time.monotonic()
    work = args.work.resolve()
    plan = Plan(python=args.python, work=work, wheels=args.wheels, jobs=args.jobs)
    if args.dry_run:
        plan_steps(plan, set(args.only) if args.only else None)
        for step in plan.steps:
            print(f"{step.name}: {shlex.join(step.command)}")
        return 0
    if work.exists():
        import shutil

        shutil.rmtree(work)
    (work / "logs").mkdir(parents=True)
    (work / "reference_data").mkdir()
    site = None
    found = probe(args.python)
    lacking = missing_requirements(found)
    if lacking:
        if args.wheels is None:
            print(
                f"{args.python} lacks {', '.join(lacking)}. This check installs nothing from "
                "the network: make a wheel folder on a machine with network access with\n  "
                f"{shlex.join(download_command())}\nand run again with WHEELS=<that folder>.",
                file=sys.stderr,
            )
            return 2
        site = work / "site"
        command = install_command(args.python, args.wheels.resolve(), site, lacking)
        step = run_step(Step("install from wheels", command, str(work / "logs" / "install.log")),
                        dict(os.environ), 300)  # fmt: skip
        plan.steps.insert(0, step)
        _report(step)
        if step.status != "passed":
            print(f"installing from {args.wheels} failed: see {step.log}", file=sys.stderr)
        found = probe_with(args.python, site)
    plan.ignored_tests = ignored_tests(found)
    if plan.ignored_tests:
        print(f"left out, a module they need is missing: {', '.join(plan.ignored_tests)}")
    plan_steps(plan, set(args.only) if args.only else None)
    execute(plan, site, began=began)
    seconds = time.monotonic() - began
    data = summary(
        plan, started.isoformat(timespec="seconds"), seconds, _device(args.python, _env(plan, site))
    )
    archive = args.archive or ROOT / "build" / f"gpu-check-{started:%Y-%m-%d-%H%M}.tar.gz"
    write_archive(work, data, archive.resolve())
    print(summary_text(data))
    print(f"archive: {archive}")
    bad = [s for s in plan.steps if s.status not in ("passed",)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
