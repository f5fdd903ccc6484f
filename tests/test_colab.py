"""Colab: every notebook's badge, GPU metadata and install block; the install's decisions for CUDA
12, CUDA 13 and no GPU, simulated without network (gpu_utils/colab.py)."""

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from conftest import ROOT
from gpu_utils import colab

NOTEBOOKS = sorted(
    p for folder in ("notebooks", "solutions", "labs") for p in (ROOT / folder).glob("*.ipynb")
)


def _name(path):
    return f"{path.parent.name}/{path.name}"


# --- every notebook that exists, whatever the chapters -------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_every_notebook_has_badge_gpu_metadata_and_install_block(path):
    nb = nbformat.read(path, as_version=4)
    relpath = path.relative_to(ROOT).as_posix()
    expected = (
        f"https://colab.research.google.com/github/{colab.REPOSITORY}/blob/{colab.BRANCH}/{relpath}"
    )
    assert nb.cells[0].cell_type == "markdown"
    assert nb.cells[0].source == f"[![Open In Colab]({colab.COLAB_BADGE_SVG})]({expected})", (
        f"{relpath}: run `python -m gpu_utils.colab sync {relpath}`"
    )
    assert nb.metadata["accelerator"] == "GPU"
    assert nb.metadata["colab"]["gpuType"] == "T4"
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert first.source.startswith(colab.install_block())
    assert "import gpu_utils as gu" in first.source


def test_notebooks_and_generated_labs_are_in_step_with_the_repository_setting():
    assert colab.stale() == [], "run `python -m gpu_utils.colab sync`"


def test_sync_is_idempotent_and_changes_only_first_cells_and_metadata():
    path = ROOT / "notebooks" / "00_start_here.ipynb"
    nb = nbformat.read(path, as_version=4)
    again = colab.synced(nb, "notebooks/00_start_here.ipynb")
    assert nbformat.writes(again) == nbformat.writes(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    code_again = [c for c in again.cells if c.cell_type == "code"]
    assert [c.outputs for c in code] == [c.outputs for c in code_again]


def test_sync_adds_badge_and_block_to_a_bare_notebook_and_the_block_is_removable():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell("import gpu_utils as gu\n\nprint(gu.banner())"),
    ]
    new = colab.synced(nb, "notebooks/99_demo.ipynb")
    assert "notebooks/99_demo.ipynb" in new.cells[0].source
    assert new.cells[1].source == "# Title"
    assert new.cells[2].source.endswith("import gpu_utils as gu\n\nprint(gu.banner())")
    assert colab._strip_block(new.cells[2].source) == nb.cells[1].source
    lab = colab.synced(nb, "solutions/99_demo_lab.ipynb")
    colab.point_badge_at(lab, "labs/99_demo_lab.ipynb")
    assert "labs/99_demo_lab.ipynb" in lab.cells[0].source


def test_badges_of_generated_labs_open_the_lab_not_the_solution():
    for lab in sorted((ROOT / "labs").glob("*.ipynb")):
        source = nbformat.read(lab, as_version=4).cells[0].source
        assert f"/labs/{lab.name})" in source and "/solutions/" not in source


# --- detecting Colab ----------------------------------------------------------------------------

COLAB_MODULES = {"google.colab": types.ModuleType("google.colab")}


@pytest.mark.parametrize(
    ("environ", "modules", "expected"),
    [
        ({"COLAB_RELEASE_TAG": "release-colab_20261101"}, COLAB_MODULES, True),
        (  # Kaggle's image is Colab's: same tag, but KAGGLE_* variables too
            {"COLAB_RELEASE_TAG": "x", "KAGGLE_KERNEL_RUN_TYPE": "Interactive"},
            COLAB_MODULES,
            False,
        ),
        ({"COLAB_RELEASE_TAG": "x"}, {}, False),  # the tag alone (a copied environment)
        ({}, COLAB_MODULES, False),  # google-colab installed on a laptop
        ({}, {}, False),
    ],
    ids=["colab", "kaggle", "tag-only", "module-only", "laptop"],
)
def test_is_colab(environ, modules, expected):
    assert colab.is_colab(environ, modules) is expected


class FakeIPython:
    def __init__(self):
        self.calls = []

    def system(self, command):
        self.calls.append(("system", command))

    def run_line_magic(self, name, line):
        self.calls.append((name, line))


def _run_install_block(monkeypatch, environ, colab_module, marker_exists=False):
    """Execute the notebooks' install block as IPython would, with a fake shell."""
    for key in [k for k in os.environ if k.startswith(("COLAB_", "KAGGLE_"))]:
        monkeypatch.delenv(key)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    if colab_module:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    real_exists = os.path.exists
    monkeypatch.setattr(
        os.path, "exists", lambda p: marker_exists if p == colab.MARKER else real_exists(p)
    )
    shell = FakeIPython()
    code = TransformerManager().transform_cell(colab.install_block())
    exec(code, {"get_ipython": lambda: shell})
    return shell.calls


def test_install_block_clones_and_installs_on_colab(monkeypatch):
    calls = _run_install_block(monkeypatch, {"COLAB_RELEASE_TAG": "x"}, colab_module=True)
    assert calls[0][0] == "system" and f"github.com/{colab.REPOSITORY}" in calls[0][1]
    assert calls[1] == ("run", f"{colab.CLONE_DIR}/gpu_utils/colab.py install")


@pytest.mark.parametrize(
    ("environ", "colab_module", "marker"),
    [
        ({}, False, False),
        ({"COLAB_RELEASE_TAG": "x", "KAGGLE_URL_BASE": "https://www.kaggle.com"}, True, False),
        ({"COLAB_RELEASE_TAG": "x"}, True, True),  # second run in the same runtime
    ],
    ids=["elsewhere", "kaggle", "already-installed"],
)
def test_install_block_does_nothing_elsewhere_or_twice(monkeypatch, environ, colab_module, marker):
    assert _run_install_block(monkeypatch, environ, colab_module, marker) == []


# --- what the install decides, per driver ---------------------------------------------------------

COLAB_PACKAGES = {"torch": "2.9.0+cu126", "numpy": "2.0.2", "cupy-cuda12x": "13.6.0"}
LOCK = "numba-cuda==0.30.4\ncupy-cuda12x==14.2.0\n"


def test_cuda_12_driver_gets_the_cu12_extra_and_keeps_colabs_builds():
    decided = colab.plan((12, 4), 1, COLAB_PACKAGES, LOCK)
    assert decided.cuda == 12
    assert decided.packages == ["numba-cuda[cu12]==0.30.4", "cloudpickle"]
    assert decided.constraints == COLAB_PACKAGES  # torch, numpy and cupy stay as they are
    assert "--constraint" in decided.pip_args("/tmp/c.txt")
    assert "CUDA 12" in decided.messages[-1]


def test_cuda_13_driver_gets_the_cu13_extra_and_a_matching_cupy_when_none_is_installed():
    decided = colab.plan((13, 0), 1, {"torch": "2.13.0", "numpy": "2.4.6"})
    assert decided.packages == ["numba-cuda[cu13]", "cloudpickle", "cupy-cuda13x"]
    assert decided.constraints == {"torch": "2.13.0", "numpy": "2.4.6"}


def test_cuda_13_driver_with_colabs_cuda_12_cupy_leaves_it_and_says_so():
    decided = colab.plan((13, 0), 1, COLAB_PACKAGES)
    assert not any(p.startswith("cupy") for p in decided.packages)
    assert "cupy-cuda12x" in decided.constraints
    assert "does not match" in decided.messages[0]


@pytest.mark.parametrize(("driver", "gpus"), [(None, 0), ((12, 4), 0)], ids=["no-driver", "no-gpu"])
def test_cpu_runtime_runs_on_the_simulator_and_says_how_to_get_a_gpu(driver, gpus):
    decided = colab.plan(driver, gpus, COLAB_PACKAGES)
    assert decided.cuda is None
    assert decided.packages == ["numba-cuda", "cloudpickle"]
    assert "Change runtime type" in decided.messages[0]


@pytest.mark.parametrize(
    ("driver", "lock"),
    [
        ((12, 4), "requirements/course-cu12.txt"),
        ((12, 9), "requirements/course-cu12.txt"),
        ((13, 0), "requirements/course.txt"),
        ((13, 2), "requirements/course.txt"),
        (None, "requirements/course.txt"),
    ],
)
def test_make_installs_the_lock_for_the_driver(driver, lock):
    assert colab.lock_for(driver) == lock
    assert (ROOT / lock).exists()


def test_no_driver_library_means_no_cuda_version():
    assert colab.driver_cuda_version(names=("libcuda-does-not-exist.so",)) is None
    assert colab.gpu_count(names=("libcuda-does-not-exist.so",)) == 0


def test_the_script_runs_with_the_standard_library_alone():
    """The Makefile calls it with the system Python, before .venv exists."""
    out = subprocess.run(
        [sys.executable, "-S", str(ROOT / "gpu_utils" / "colab.py"), "lock"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in {"requirements/course.txt", "requirements/course-cu12.txt"}


def _fake_colab(monkeypatch, tmp_path, driver, gpus):
    monkeypatch.setenv("COLAB_RELEASE_TAG", "x")
    for key in [k for k in os.environ if k.startswith("KAGGLE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(colab, "driver_cuda_version", lambda: driver)
    monkeypatch.setattr(colab, "gpu_count", lambda: gpus)
    monkeypatch.setattr(colab, "_installed", lambda: dict(COLAB_PACKAGES))
    clone = tmp_path / "gpu-course"
    (clone / "requirements").mkdir(parents=True)
    (clone / "requirements" / "course-cu12.txt").write_text(LOCK)
    calls = []

    def run(args, **kwargs):
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, "", "")

    monkeypatch.setattr(colab.subprocess, "run", run)
    return clone, calls


def test_install_runs_pip_twice_quietly_then_marks_the_runtime(monkeypatch, tmp_path, capsys):
    clone, calls = _fake_colab(monkeypatch, tmp_path, (12, 4), 1)
    marker = tmp_path / ".gpu-course-installed"
    assert colab.install(str(clone), str(marker)) == 0
    assert calls[0][-4:-2] == ["numba-cuda[cu12]==0.30.4", "cloudpickle"]
    assert calls[1][-4:] == ["--quiet", "--no-deps", "-e", str(clone)]
    constraints = (tmp_path / ".gpu-course-constraints.txt").read_text()
    assert "torch==2.9.0+cu126" in constraints and "numpy==2.0.2" in constraints
    assert json.loads(marker.read_text())["cuda"] == 12
    assert capsys.readouterr().out.count("\n") == 1  # one line: what was installed
    calls.clear()
    assert colab.install(str(clone), str(marker)) == 0 and calls == []  # once per runtime


def test_install_on_a_cpu_runtime_says_how_to_switch(monkeypatch, tmp_path, capsys):
    clone, calls = _fake_colab(monkeypatch, tmp_path, None, 0)
    assert colab.install(str(clone), str(tmp_path / "marker")) == 0
    assert calls[0][-4:-2] == ["numba-cuda", "cloudpickle"]
    assert "Runtime > Change runtime type > T4 GPU" in capsys.readouterr().out


def test_install_does_nothing_outside_colab(monkeypatch, tmp_path):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(colab.subprocess, "run", lambda *a, **k: pytest.fail("ran pip"))
    assert colab.install(str(tmp_path), str(tmp_path / "marker")) == 0
    assert not Path(tmp_path / "marker").exists()


def test_readme_chapter_table_has_a_colab_column_from_the_repository_setting():
    text = (ROOT / "README.md").read_text()
    assert colab.synced_readme(text) == text, "run `python -m gpu_utils.colab sync`"
    rows = [line for line in text.splitlines() if colab._ROW.match(line)]
    assert rows
    for row in rows:
        chapter = colab._ROW.match(row).group(2)
        assert f"]({colab.colab_url(chapter)})" in row
        assert (ROOT / chapter).exists(), f"README links {chapter}, which does not exist"
