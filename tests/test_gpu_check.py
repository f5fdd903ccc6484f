"""benchmarks/gpu_check.py (`make gpu-check`): the parts that need no GPU, on the CPU: what it
finds to run, its arguments, what it would install, its time budget, the archive, and the
notebook runner's handling of cells tagged raises-exception."""

import json
import shlex
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import gpu_check  # benchmarks/gpu_check.py, on the path through pyproject.toml
import pytest

from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def _touch(path, text=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_benchmarks_are_discovered_in_chapter_order(tmp_path):
    for name in ("ch01_a", "ch04_b", "checker_corpus", "kernels", "kernels_ch04", "trace_vs_ncu"):
        _touch(tmp_path / "benchmarks" / f"{name}.py")
    names = [p.stem for p in gpu_check.benchmark_scripts(tmp_path)]
    assert names == ["ch01_a", "ch04_b", "kernels", "trace_vs_ncu"]  # no CPU tool, no modules
    _touch(tmp_path / "benchmarks" / "ch12_triton.py")  # a new chapter's script is picked up
    assert [p.stem for p in gpu_check.benchmark_scripts(tmp_path)][2] == "ch12_triton"


def test_the_repository_benchmarks_all_have_a_limit_within_the_budget():
    scripts = gpu_check.benchmark_scripts()
    stems = {p.stem for p in scripts}
    assert {"ch04_latency", "ch03_streams", "kernels", "trace_vs_ncu"} <= stems
    assert "checker_corpus" not in stems
    for script in scripts:
        assert 0 < gpu_check.benchmark_timeout(script) <= gpu_check.BENCHMARKS_BUDGET_S
    import kernels

    assert gpu_check.BENCHMARK_TIMEOUT_S["kernels"] >= kernels.BUDGET_S


def test_every_notebook_and_solution_is_run_and_chapter_12_when_it_exists(tmp_path):
    for rel in ("notebooks/00_a.ipynb", "solutions/01_a_lab.ipynb", "labs/01_a_lab.ipynb"):
        _touch(tmp_path / rel, "{}")
    found = [p.relative_to(tmp_path).as_posix() for p in gpu_check.notebooks(tmp_path)]
    assert found == ["notebooks/00_a.ipynb", "solutions/01_a_lab.ipynb"]  # labs: generated
    _touch(tmp_path / "notebooks" / "12_triton.ipynb", "{}")
    _touch(tmp_path / "solutions" / "12_triton_lab.ipynb", "{}")
    found = [p.name for p in gpu_check.notebooks(tmp_path)]
    assert "12_triton.ipynb" in found and "12_triton_lab.ipynb" in found


def test_arguments():
    args = gpu_check.parse(["run"])
    assert args.python == sys.executable and args.wheels is None and args.jobs >= 1
    with pytest.raises(SystemExit):
        gpu_check.parse([])  # says what to do
    with pytest.raises(SystemExit):
        gpu_check.parse(["run", "--jobs", "0"])
    with pytest.raises(SystemExit):
        gpu_check.parse(["run", "--only", "everything"])


def test_a_missing_wheel_folder_says_how_to_make_one(capsys):
    with pytest.raises(SystemExit):
        gpu_check.parse(["run", "--wheels", "/no/such/folder"])
    err = capsys.readouterr().err
    assert "no such folder" in err and "pip download" in err


def test_the_download_line_uses_the_course_pins_and_is_documented():
    line = gpu_check.download_command()
    assert line[:2] == ["pip", "download"] and "--only-binary=:all:" in line
    assert "numpy==2.4.6" in line and "--abi" in line and "cp312" in line
    pins = gpu_check._pins(ROOT)
    assert f"pytest=={pins['pytest']}" in line and f"ipython=={pins['ipython']}" in line
    assert shlex.join(line) in (ROOT / "CONTRIBUTING.md").read_text(), (
        "CONTRIBUTING.md must show the exact line: python3 benchmarks/gpu_check.py download-command"
    )


def test_what_to_install_from_the_wheels():
    every = dict.fromkeys(gpu_check.NEEDED, "1.0")
    assert gpu_check.missing_requirements({**every, "numpy": "2.4.6"}) == []
    # the first H100 image: numpy 2.5.2, with which numba-cuda 0.30.4 compiles nothing
    assert gpu_check.missing_requirements({**every, "numpy": "2.5.2"}) == ["numpy==2.4.6"]
    lacking = gpu_check.missing_requirements({**every, "numpy": "2.4.6", "pytest_timeout": None})
    assert lacking == ["pytest-timeout==2.4.0"]
    command = gpu_check.install_command("py", ROOT / "w", ROOT / "s", ["numpy==2.4.6"])
    assert "--no-index" in command and "--target" in command  # nothing from the network
    assert gpu_check.ignored_tests(every) == []
    assert "test_notebooks.py" in gpu_check.ignored_tests({**every, "nbclient": None})


def test_the_probe_reports_what_this_interpreter_has():
    found = gpu_check.probe(sys.executable)
    assert set(found) == set(gpu_check.NEEDED)
    assert found["numpy"] and found["pytest"]


@pytest.mark.parametrize(
    ("tags", "error", "verdict"),
    [
        ([], None, "ok"),
        (["nbval-ignore-output"], None, "ok"),
        ([], "ValueError: x", "failed"),
        (["raises-exception"], "ValueError: x", "expected error"),
        (["raises-exception", "nbval-ignore-output"], "IndexError: y", "expected error"),
        (["raises-exception"], None, "note"),  # a GPU may not raise what the simulator reports
    ],
)
def test_cell_verdicts_honour_raises_exception(tags, error, verdict):
    assert gpu_check.cell_verdict(tags, error)[0] == verdict


def _notebook(path, cells):
    notebook = {
        "cells": [
            {"cell_type": kind, "metadata": {"tags": tags}, "source": source}
            for kind, source, tags in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook))
    return path


def _run_notebook(path):
    return subprocess.run(
        [sys.executable, str(SCRIPT), "notebook", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_notebook_runner_runs_ipython_cells_and_honours_tags(tmp_path):
    path = _notebook(
        tmp_path / "good.ipynb",
        [
            ("markdown", "# not run", []),
            ("code", "x = 2\n!echo from-the-shell", []),
            ("code", "raise ValueError('meant to fail')", ["raises-exception"]),
            ("code", "assert x == 2\nopen('made-here.txt', 'w').write('ok')", []),
            ("code", "y = 1", ["raises-exception"]),
        ],
    )
    done = _run_notebook(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "from-the-shell" in done.stdout  # IPython's ! lines work
    assert "cell 2: expected error (" in done.stdout and "meant to fail" in done.stdout
    assert "cell 4: note" in done.stdout and "NOTEBOOK PASSED" in done.stdout
    assert (tmp_path / "made-here.txt").exists()  # run from the notebook's folder


def test_the_notebook_runner_stops_at_an_untagged_error(tmp_path):
    path = _notebook(
        tmp_path / "bad.ipynb",
        [("code", "1 / 0", []), ("code", "open('never.txt', 'w')", [])],
    )
    done = _run_notebook(path)
    assert done.returncode == 1
    assert "NOTEBOOK FAILED at cell 0: ZeroDivisionError" in done.stdout
    assert not (tmp_path / "never.txt").exists()


def test_steps_pass_fail_time_out_or_are_skipped(tmp_path):
    def step(code):
        return gpu_check.Step("s", [sys.executable, "-c", code], str(tmp_path / "s.log"))

    assert gpu_check.run_step(step("print('hi')"), {}, 30).status == "passed"
    assert "hi" in (tmp_path / "s.log").read_text()
    failed = gpu_check.run_step(step("raise SystemExit(3)"), {}, 30)
    assert failed.status == "failed" and failed.detail == "exit code 3"
    slow = gpu_check.run_step(step("import time; time.sleep(30)"), {}, 0.5)
    assert slow.status == "timed out" and slow.seconds < 10
    assert gpu_check.run_step(step("print(1)"), {}, 0).status == "skipped"


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its new parent to reap it does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_step_that_exits_leaves_no_process_behind(tmp_path):
    """A step whose own process exits while a child it started keeps running (a rank, a kernel):
    the child is stopped before the next step, and the log says so."""
    spawn = (
        "import subprocess, sys; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
        "print('child', p.pid, flush=True)"
    )
    step = gpu_check.Step("s", [sys.executable, "-c", spawn], str(tmp_path / "s.log"))
    assert gpu_check.run_step(step, {}, 30).status == "passed"
    log = (tmp_path / "s.log").read_text()
    pid = int(log.split("child ", 1)[1].split()[0])
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)
    assert "stopped the processes this step left running" in log
    quiet = gpu_check.Step("q", [sys.executable, "-c", "print(1)"], str(tmp_path / "q.log"))
    gpu_check.run_step(quiet, {}, 30)
    assert "left running" not in (tmp_path / "q.log").read_text()


@pytest.mark.parametrize("install_s", [0.0, 90.0])
def test_no_step_is_given_time_beyond_the_nine_minutes(tmp_path, monkeypatch, install_s):
    """Worst case: every step uses all the time it is given (and the install took
    ``install_s``). Each must still end by the total budget, less the time the archive takes."""
    plan = gpu_check.Plan(python="python", work=tmp_path, wheels=None, jobs=16)
    gpu_check.plan_steps(plan)
    assert plan.steps[0].name == "doctor" and plan.steps[-1].name.startswith("notebook ")
    now = [install_s]
    given = []

    def fake_run_step(step, env, timeout, cwd=None):
        given.append((now[0], timeout))
        now[0] += max(0.0, timeout)  # as if each step ran out its whole limit
        step.status = "timed out"
        return step

    monkeypatch.setattr(gpu_check, "run_step", fake_run_step)
    gpu_check.execute(plan, None, clock=lambda: now[0], began=0.0)
    assert len(given) == len(plan.steps)
    assert all(start + max(0, limit) <= gpu_check.TOTAL_BUDGET_S - 30 for start, limit in given)


def test_the_archive_holds_the_summary_logs_and_reference_json(tmp_path):
    work = tmp_path / "work"
    _touch(work / "logs" / "doctor.txt", "the course runs here (gpu mode)")
    _touch(work / "logs" / "notebooks" / "notebooks__01.log", "NOTEBOOK PASSED")
    _touch(work / "reference_data" / "ch04_latency.json", '{"device": "NVIDIA H100"}')
    plan = gpu_check.Plan(python="python3", work=work, wheels=None, jobs=16)
    plan.steps = [
        gpu_check.Step("doctor", ["python3"], "x", status="passed", seconds=2.0),
        gpu_check.Step("notebook a", ["python3"], "y", status="timed out", detail="stopped"),
    ]
    data = gpu_check.summary(plan, "2026-11-26T10:00:00+00:00", 500.0, "NVIDIA H100 80GB HBM3")
    assert data["within_budget"] and data["counts"] == {"passed": 1, "timed out": 1}
    archive = gpu_check.write_archive(work, data, tmp_path / "out" / "gpu-check-x.tar.gz")
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        summary = tar.extractfile("gpu-check-x/summary.txt").read().decode()
    assert {
        "gpu-check-x/summary.json",
        "gpu-check-x/logs/doctor.txt",
        "gpu-check-x/logs/notebooks/notebooks__01.log",
        "gpu-check-x/reference_data/ch04_latency.json",
    } <= names
    assert "NVIDIA H100 80GB HBM3" in summary and "timed out" in summary and "met" in summary
    late = gpu_check.summary(plan, "t", 600.0, "d")
    assert "EXCEEDED" in gpu_check.summary_text(late)


def test_make_benchmarks_and_gpu_check_call_this_script():
    makefile = (ROOT / "Makefile").read_text()
    assert (
        "benchmarks/gpu_check.py run" in makefile
        and "benchmarks/gpu_check.py benchmarks" in makefile
    )
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "benchmarks", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "ch04_latency.py" in done.stdout and "checker_corpus" not in done.stdout
    assert "ch08_collectives.py --quick" in done.stdout


def test_saved_references_go_where_the_check_says(tmp_path, monkeypatch):
    import gpu_utils as gu

    if gu.mode != "simulator":
        pytest.skip("the simulator refuses to save; a GPU would record")
    monkeypatch.setenv("GPU_COURSE_REFERENCE_OUT", str(tmp_path))
    with pytest.raises(RuntimeError, match="real GPU"):
        gu.reference.save("demo", [1])
    monkeypatch.setattr(gu.reference.runtime, "mode", "gpu")
    monkeypatch.setattr(gu.reference, "device_info", lambda: type("D", (), {"name": "G"})())
    path = gu.reference.save("demo", [1], command="c")
    assert path == tmp_path / "demo.json" and json.loads(path.read_text())["device"] == "G"
    assert not (gu.reference.DATA_DIR / "demo.json").exists()


def test_the_steps_run_for_real_in_their_phases(tmp_path):
    """execute() with small real commands: the doctor, the benchmarks one at a time, then the
    unit tier beside the notebooks; each step's log holds its command and output, and the
    benchmarks see where to write their JSON."""
    plan = gpu_check.Plan(python=sys.executable, work=tmp_path, wheels=None, jobs=4)

    def step(name, code):
        log = str(tmp_path / "logs" / f"{name.replace(' ', '_')}.log")
        return gpu_check.Step(name, [sys.executable, "-c", code], log)

    out = "import os; print(os.environ['GPU_COURSE_MODE'], os.environ['GPU_COURSE_REFERENCE_OUT'])"
    plan.steps = [
        step("doctor", "print('doctor ran')"),
        step("benchmark a", out),
        step("benchmark b", "raise SystemExit(1)"),
        step("unit tier (GPU mode)", "print('tests ran')"),
        *(step(f"notebook n{i}", f"print('notebook {i}')") for i in range(3)),
    ]
    gpu_check.execute(plan, None)
    status = {s.name: s.status for s in plan.steps}
    assert status["benchmark b"] == "failed"
    assert all(v == "passed" for k, v in status.items() if k != "benchmark b")
    log = (tmp_path / "logs" / "benchmark_a.log").read_text()
    assert f"gpu {tmp_path / 'reference_data'}" in log
    assert "notebook 2" in (tmp_path / "logs" / "notebook_n2.log").read_text()
