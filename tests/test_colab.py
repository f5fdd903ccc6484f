"""Colab: every notebook's badge (or the sentence saying it will come), GPU metadata and install
block, from pyproject.toml; publishing; the install cell's and the install's decisions (CUDA 12 and
13 drivers, a CPU runtime, an unpublished course, a half clone, a re-run, NumPy 2.5, pip's conflict
lines), simulated without network (gpu_utils/colab.py)."""

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest
import tomllib
from IPython.core.inputtransformer2 import TransformerManager

from conftest import ROOT
from gpu_utils import colab
from gpu_utils import driver as driver_module
from gpu_utils.authoring import labgen, publish

NOTEBOOKS = sorted(
    p for folder in ("notebooks", "solutions", "labs") for p in (ROOT / folder).glob("*.ipynb")
)


def _name(path):
    return f"{path.parent.name}/{path.name}"


@pytest.fixture
def published(monkeypatch):
    """The course as if published at github.com/me/course, tag v1.0 (restored afterwards)."""
    monkeypatch.setattr(publish, "REPOSITORY", "me/course")
    monkeypatch.setattr(publish, "REF", "v1.0")


@pytest.fixture
def unpublished(monkeypatch):
    monkeypatch.setattr(publish, "REPOSITORY", None)
    monkeypatch.setattr(publish, "REF", None)


# --- every notebook that exists, whatever the chapters -------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_every_notebook_has_badge_gpu_metadata_and_install_block(path):
    nb = nbformat.read(path, as_version=4)
    relpath = path.relative_to(ROOT).as_posix()
    assert nb.cells[0].cell_type == "markdown"
    assert nb.cells[0].source == publish.badge(relpath), (
        f"{relpath}: run `python -m gpu_utils.colab sync`"
    )
    assert nb.metadata["accelerator"] == "GPU"
    assert nb.metadata["colab"]["gpuType"] == "T4"
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert first.source.startswith(publish.cell_block())
    assert "import gpu_utils as gu" in first.source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_no_notebook_points_at_an_address_the_course_does_not_own(path):
    nb = nbformat.read(path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    text = nb.cells[0].source + "\n" + first.source  # what sync writes: badge and install block
    if publish.REPOSITORY is None:  # not published: no badge link and no clone at all
        assert "colab.research.google.com/github" not in text and "git clone" not in text
        assert publish.PENDING in nb.cells[0].source
    else:
        for address in ("colab.research.google.com/github/", "https://github.com/"):
            for found in text.split(address)[1:]:
                assert found.startswith(publish.REPOSITORY + "/"), f"{_name(path)}: {found[:60]}"


def test_pyproject_is_the_one_source_of_where_the_course_lives():
    text = (ROOT / "pyproject.toml").read_text()
    assert publish.published(text) == (publish.REPOSITORY, publish.REF)
    tomllib.loads(text)


def test_notebooks_and_generated_labs_are_in_step_with_the_repository_setting():
    assert publish.stale() == [], "run `python -m gpu_utils.colab sync`"


def _tree(tmp_path, names=("notebooks/00_start_here.ipynb", "solutions/01_why_gpus_lab.ipynb")):
    """A scratch copy of the repository's publishing inputs and a few notebooks."""
    for name in (*names, "pyproject.toml", "README.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_sync_changes_only_first_cells_and_metadata_and_is_idempotent(tmp_path, published):
    tree = _tree(tmp_path)
    before = nbformat.read(tree / "notebooks/00_start_here.ipynb", as_version=4)
    written = publish.sync(root=tree)
    assert "notebooks/00_start_here.ipynb" in written and "labs/01_why_gpus_lab.ipynb" in written
    after = nbformat.read(tree / "notebooks/00_start_here.ipynb", as_version=4)
    code = [c for c in before.cells if c.cell_type == "code"]
    code_after = [c for c in after.cells if c.cell_type == "code"]
    assert [c.outputs for c in code] == [c.outputs for c in code_after]
    assert [c.source for c in code[1:]] == [c.source for c in code_after[1:]]
    assert [c.source for c in before.cells[1:] if c.cell_type == "markdown"] == [
        c.source for c in after.cells[1:] if c.cell_type == "markdown"
    ]
    assert "blob/v1.0/notebooks/00_start_here.ipynb" in after.cells[0].source
    assert "-b v1.0 https://github.com/me/course" in code_after[0].source
    assert publish.sync(root=tree) == [] and publish.stale(root=tree) == []
    lab = nbformat.read(tree / "labs/01_why_gpus_lab.ipynb", as_version=4)
    assert lab.cells[0].source == publish.badge("labs/01_why_gpus_lab.ipynb")


def test_sync_adds_badge_and_block_to_a_bare_notebook_and_the_block_is_removable(published):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell("import gpu_utils as gu\n\nprint(gu.banner())"),
    ]
    new = publish.synced(nb, "notebooks/99_demo.ipynb")
    assert "notebooks/99_demo.ipynb" in new.cells[0].source
    assert new.cells[1].source == "# Title"
    assert new.cells[2].source.endswith("import gpu_utils as gu\n\nprint(gu.banner())")
    assert publish._strip_block(new.cells[2].source) == nb.cells[1].source
    lab = publish.synced(nb, "solutions/99_demo_lab.ipynb")
    labgen.point_first_cell_at_lab(lab, "99_demo_lab.ipynb")
    assert lab.cells[0].source == publish.badge("labs/99_demo_lab.ipynb")


def test_unpublished_notebooks_say_the_link_will_come_and_republish_cleanly(unpublished):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import gpu_utils as gu")]
    pending = publish.synced(nb, "notebooks/99_demo.ipynb")
    assert pending.cells[0].source == f"*{publish.PENDING} Until then, {publish.DRIVE_HINT}*"
    assert "git clone" not in pending.cells[1].source and "github" not in pending.cells[1].source
    publish.REPOSITORY, publish.REF = "me/course", "v2.0"  # restored by the fixture
    again = publish.synced(pending, "notebooks/99_demo.ipynb")
    assert len(again.cells) == 2 and "blob/v2.0/" in again.cells[0].source
    assert publish._strip_block(again.cells[1].source) == "import gpu_utils as gu"


def test_synced_notebooks_stay_lint_clean(tmp_path, published):
    """The install block is written as ruff formats it (CI runs ruff on every notebook)."""
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists():
        pytest.skip("ruff is not installed here")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import gpu_utils as gu\n\nprint(gu.banner())")]
    nbformat.write(publish.synced(nb, "notebooks/a.ipynb"), tmp_path / "published.ipynb")
    publish.REPOSITORY = publish.REF = None
    nbformat.write(publish.synced(nb, "notebooks/a.ipynb"), tmp_path / "pending.ipynb")
    config = ["--config", str(ROOT / "pyproject.toml")]
    for command in (["format", "--check"], ["check"]):
        out = subprocess.run(
            [str(ruff), *command, *config, str(tmp_path)], capture_output=True, text=True
        )
        assert out.returncode == 0, out.stdout + out.stderr


def test_badges_of_generated_labs_open_the_lab_not_the_solution():
    for lab in sorted((ROOT / "labs").glob("*.ipynb")):
        source = nbformat.read(lab, as_version=4).cells[0].source
        assert "/solutions/" not in source
        if publish.REPOSITORY:
            assert f"/labs/{lab.name})" in source


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
    """Runs the install cell's shell and magic lines as records; ``effects`` simulate them."""

    def __init__(self, effects=None):
        self.calls, self.effects = [], effects or {}

    def system(self, command):
        self.calls.append(("system", command))
        self.effects.get("system", lambda: None)()

    def run_line_magic(self, name, line):
        self.calls.append((name, line))
        self.effects.get(name, lambda: None)()


def _run_install_block(monkeypatch, environ, colab_module, existing=(), effects=None):
    """Execute the notebooks' install block as IPython would, with a fake shell; ``existing``:
    the paths that exist (the marker, the clone's completion file)."""
    for key in [k for k in os.environ if k.startswith(("COLAB_", "KAGGLE_"))]:
        monkeypatch.delenv(key)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    if colab_module:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exists = set(existing)
    real_exists = os.path.exists
    monkeypatch.setattr(
        os.path, "exists", lambda p: p in exists if p.startswith("/content") else real_exists(p)
    )
    shell = FakeIPython({k: (lambda f=f: f(exists)) for k, f in (effects or {}).items()})
    code = TransformerManager().transform_cell(publish.cell_block())
    exec(code, {"get_ipython": lambda: shell})
    return shell.calls


ON_COLAB = {"COLAB_RELEASE_TAG": "x"}
DONE = f"{colab.CLONE_DIR}/.gpu-course-clone-v1.0"


def _installs(exists):
    exists.add(colab.MARKER)


def test_install_cell_clones_the_tag_it_was_built_for_and_installs(monkeypatch, published):
    calls = _run_install_block(monkeypatch, ON_COLAB, True, effects={"run": _installs})
    assert calls[0][0] == "system"
    assert calls[0][1].startswith(f"rm -rf {colab.CLONE_DIR} && git clone -q --depth 1 -b v1.0 ")
    assert "https://github.com/me/course" in calls[0][1] and calls[0][1].endswith(f"touch {DONE}")
    assert calls[1] == ("run", f"{colab.CLONE_DIR}/gpu_utils/colab.py install --ref v1.0")


def test_install_cell_replaces_a_half_finished_clone(monkeypatch, published):
    # The folder exists (an interrupted clone) but its completion file does not: clone afresh.
    calls = _run_install_block(
        monkeypatch, ON_COLAB, True, existing={colab.CLONE_DIR}, effects={"run": _installs}
    )
    assert calls[0][1].startswith(f"rm -rf {colab.CLONE_DIR} && git clone")


def test_install_cell_rerun_after_a_failed_install_keeps_the_clone(monkeypatch, published):
    calls = _run_install_block(
        monkeypatch, ON_COLAB, True, existing={colab.CLONE_DIR, DONE}, effects={"run": _installs}
    )
    assert [c[0] for c in calls] == ["run"]


def test_install_cell_stops_with_a_clear_error_when_the_set_up_failed(monkeypatch, published):
    # %run swallows errors; the cell checks the marker and raises before `import gpu_utils`.
    with pytest.raises(RuntimeError, match="set-up did not finish"):
        _run_install_block(monkeypatch, ON_COLAB, True)


def test_install_cell_of_an_unpublished_course_takes_it_from_google_drive(unpublished):
    # Run end to end under a fake Colab in tests/test_colab_drive.py; here: what it is made of.
    block = publish.cell_block()
    assert 'drive.mount("/content/drive")' in block and "git clone" not in block
    assert f"%run /content/{colab.BOOT_NAME} drive --version {publish.VERSION} --content" in block
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version == publish.VERSION


def test_install_cell_of_an_unpublished_course_does_nothing_elsewhere(monkeypatch, unpublished):
    assert _run_install_block(monkeypatch, {}, False) == []


def _refused(mountpoint, **options):
    raise ValueError("mount failed")  # what google.colab.drive.mount raises without consent


@pytest.mark.parametrize("state", ["unpublished", "published"])
def test_the_install_cell_stops_with_its_message_and_no_traceback(monkeypatch, capsys, state):
    """In a real IPython shell the stop shows the message alone: no traceback, no frame of the
    cell (IPython asks the exception for ``_render_traceback_``)."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setattr(publish, "REPOSITORY", "me/course" if state == "published" else None)
    monkeypatch.setattr(publish, "REF", "v1.0" if state == "published" else None)
    for key, value in ON_COLAB.items():
        monkeypatch.setenv(key, value)
    fake = types.ModuleType("google.colab")
    fake.drive = types.SimpleNamespace(mount=_refused)  # unpublished: the learner says no
    monkeypatch.setitem(sys.modules, "google.colab", fake)
    shell = InteractiveShell.instance()
    monkeypatch.setattr(shell, "system", lambda command: None)  # the clone: not here
    monkeypatch.setattr(shell, "run_line_magic", lambda name, line: None)  # %run: fails quietly
    try:
        result = shell.run_cell(publish.cell_block())
    finally:
        InteractiveShell.clear_instance()
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert isinstance(result.error_in_exec, RuntimeError)  # "Run all" stops here
    expected = colab.DRIVE_FAILED if state == "unpublished" else "set-up did not finish"
    assert expected in text
    assert "Traceback" not in text and "SetUpStop" not in text and "line " not in text


@pytest.mark.parametrize(
    ("environ", "colab_module", "existing"),
    [
        ({}, False, ()),
        ({"COLAB_RELEASE_TAG": "x", "KAGGLE_URL_BASE": "https://www.kaggle.com"}, True, ()),
        (ON_COLAB, True, (colab.MARKER,)),  # second run in the same runtime
    ],
    ids=["elsewhere", "kaggle", "already-installed"],
)
def test_install_cell_does_nothing_elsewhere_or_twice(
    monkeypatch, published, environ, colab_module, existing
):
    assert _run_install_block(monkeypatch, environ, colab_module, existing) == []


# --- what the install decides, per driver ---------------------------------------------------------

COLAB_PACKAGES = {"torch": "2.9.0+cu126", "numpy": "2.0.2", "cupy-cuda12x": "13.6.0"}
# Colab's image of August 2026 (googlecolab/backend-info): CUDA 12 throughout, cuDF included.
COLAB_2026 = {
    "torch": "2.11.0+cu128",
    "numpy": "2.1.3",
    "cupy-cuda12x": "14.0.1",
    "numba-cuda": "0.22.2",
    "cudf-cu12": "26.2.1",
}
LOCK = "numba-cuda==0.30.4\ncupy-cuda12x==14.2.0\n"


def test_cuda_12_driver_gets_the_cu12_extra_and_keeps_colabs_builds():
    decided = colab.plan((12, 4), 1, COLAB_PACKAGES, LOCK)
    assert decided.cuda == 12
    assert decided.packages == ["numba-cuda[cu12]==0.30.4", "cloudpickle"]
    assert decided.fallback == ["numba-cuda[cu12]>=0.30,<0.31", "cloudpickle"]
    assert decided.constraints == COLAB_PACKAGES  # torch, numpy and cupy stay as they are
    assert "--constraint" in decided.pip_args("/tmp/c.txt")
    assert "CUDA 12" in decided.messages[-1]


def test_a_cuda_13_driver_keeps_colabs_cuda_12_stack():
    # A 580+ driver runs CUDA 12 builds too: installing CUDA 13 would replace Colab's CUDA 12
    # cuda-bindings and break cuDF, so the course keeps to CUDA 12.
    decided = colab.plan((13, 0), 1, COLAB_2026, LOCK)
    assert decided.cuda == 12
    assert decided.packages[0] == "numba-cuda[cu12]==0.30.4"
    assert "keeps to CUDA 12" in decided.messages[-1]


def test_cuda_13_driver_without_a_cuda_stack_gets_cuda_13_and_a_matching_cupy():
    decided = colab.plan((13, 0), 1, {"torch": "2.13.0", "numpy": "2.4.6"})
    assert decided.packages == ["numba-cuda[cu13]>=0.30,<0.31", "cloudpickle", "cupy-cuda13x"]
    assert decided.constraints == {"torch": "2.13.0", "numpy": "2.4.6"}


def test_the_preinstalled_cuda_major_is_read_from_the_stack():
    assert colab.preinstalled_cuda(COLAB_2026) == 12
    assert colab.preinstalled_cuda({"torch": "2.13.0+cu130"}) == 13
    assert colab.preinstalled_cuda({"cupy-cuda12x": "14.0.1"}) == 12
    assert colab.preinstalled_cuda({"torch": "2.13.0"}) is None


@pytest.mark.parametrize(("driver", "gpus"), [(None, 0), ((12, 4), 0)], ids=["no-driver", "no-gpu"])
def test_cpu_runtime_runs_on_the_simulator_and_says_how_to_get_a_gpu(driver, gpus):
    decided = colab.plan(driver, gpus, COLAB_PACKAGES)
    assert decided.cuda is None
    assert decided.packages == ["numba-cuda>=0.30,<0.31", "cloudpickle"]
    assert "Change runtime type" in decided.messages[0]


def test_numpy_2_5_on_colab_is_kept_and_explained():
    decided = colab.plan((12, 4), 1, COLAB_PACKAGES | {"numpy": "2.5.2"}, LOCK)
    assert decided.constraints["numpy"] == "2.5.2"
    assert any("row_stack" in m and "stand-in" in m for m in decided.messages)


PIP_CONFLICT = """\
ERROR: pip's dependency resolver does not currently take into account all the packages that are \
installed. This behaviour is the source of the following dependency conflicts.
cudf-cu12 26.2.1 requires numba-cuda<0.23,>=0.22.0, but you have numba-cuda 0.30.4 which is \
incompatible.
"""


def test_pips_conflict_lines_say_which_colab_package_breaks():
    found = colab.conflicts(PIP_CONFLICT.replace("\\\n", ""))
    assert found == [
        "cuDF (cudf-cu12) 26.2.1 requires numba-cuda<0.23,>=0.22.0, but the course installed "
        "numba-cuda 0.30.4: cuDF (cudf-cu12) may not work in this runtime (the course does not "
        "use it)."
    ]
    assert colab.conflicts("Successfully installed numba-cuda-0.30.4") == []


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
    assert driver_module.cuda_version(names=("libcuda-does-not-exist.so",)) is None
    assert driver_module.gpu_count(names=("libcuda-does-not-exist.so",)) == 0


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


def _fake_colab(monkeypatch, tmp_path, driver, gpus, installed=None, pip=()):
    """A Colab runtime without network: ``pip`` lists (returncode, output) of successive pip runs
    (then success)."""
    monkeypatch.setenv("COLAB_RELEASE_TAG", "x")
    for key in [k for k in os.environ if k.startswith("KAGGLE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(driver_module, "cuda_version", lambda: driver)
    monkeypatch.setattr(driver_module, "gpu_count", lambda: gpus)
    monkeypatch.setattr(colab, "_installed", lambda: dict(installed or COLAB_PACKAGES))
    clone = tmp_path / "gpu-course"
    (clone / "requirements").mkdir(parents=True)
    (clone / "requirements" / "course-cu12.txt").write_text(LOCK)
    (clone / "requirements" / "course.txt").write_text(LOCK.replace("12", "13"))
    calls, results = [], list(pip)

    def run(args, **kwargs):
        calls.append(args)
        code, output = results.pop(0) if results else (0, "")
        return subprocess.CompletedProcess(args, code, output, "")

    monkeypatch.setattr(colab.subprocess, "run", run)
    return clone, calls


def test_install_runs_pip_twice_then_marks_the_runtime(monkeypatch, tmp_path, capsys):
    clone, calls = _fake_colab(monkeypatch, tmp_path, (12, 4), 1)
    marker = tmp_path / ".gpu-course-installed"
    assert colab.install(str(clone), str(marker), ref="v1.0") == 0
    assert calls[0][-4:-2] == ["numba-cuda[cu12]==0.30.4", "cloudpickle"]
    assert calls[1][-4:] == ["--quiet", "--no-deps", "-e", str(clone)]
    constraints = (tmp_path / ".gpu-course-constraints.txt").read_text()
    assert "torch==2.9.0+cu126" in constraints and "numpy==2.0.2" in constraints
    assert json.loads(marker.read_text()) | {"packages": None} == {
        "cuda": 12,
        "ref": "v1.0",
        "packages": None,
    }
    assert capsys.readouterr().out.count("\n") == 1  # one line: what was installed
    calls.clear()
    assert colab.install(str(clone), str(marker)) == 0 and calls == []  # once per runtime


def test_install_falls_back_to_a_bounded_numba_cuda_and_names_what_pip_broke(
    monkeypatch, tmp_path, capsys
):
    conflict = PIP_CONFLICT.replace("\\\n", "")
    clone, calls = _fake_colab(
        monkeypatch, tmp_path, (13, 0), 1, COLAB_2026, pip=[(1, "no match"), (0, conflict)]
    )
    assert colab.install(str(clone), str(tmp_path / "marker")) == 0
    assert calls[0][4] == "numba-cuda[cu12]==0.30.4"  # Colab's CUDA 12 stack, the pinned release
    assert calls[1][4] == "numba-cuda[cu12]>=0.30,<0.31"  # never an unbounded numba-cuda
    out = capsys.readouterr().out
    assert "cuDF (cudf-cu12) 26.2.1 requires numba-cuda<0.23" in out
    assert "keeps to CUDA 12" in out


def test_a_failed_install_shows_pips_lines_and_leaves_no_marker(monkeypatch, tmp_path, capsys):
    clone, _ = _fake_colab(monkeypatch, tmp_path, (12, 4), 1, pip=[(1, "x"), (1, "ERROR: boom")])
    marker = tmp_path / "marker"
    assert colab.install(str(clone), str(marker)) == 1
    assert "ERROR: boom" in capsys.readouterr().out and not marker.exists()


def test_install_on_a_cpu_runtime_says_how_to_switch(monkeypatch, tmp_path, capsys):
    clone, calls = _fake_colab(monkeypatch, tmp_path, None, 0)
    assert colab.install(str(clone), str(tmp_path / "marker")) == 0
    assert calls[0][-4:-2] == ["numba-cuda==0.30.4", "cloudpickle"]
    assert "Runtime > Change runtime type > T4 GPU" in capsys.readouterr().out


def test_install_does_nothing_outside_colab(monkeypatch, tmp_path):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(colab.subprocess, "run", lambda *a, **k: pytest.fail("ran pip"))
    assert colab.install(str(tmp_path), str(tmp_path / "marker")) == 0
    assert not Path(tmp_path / "marker").exists()


def test_readme_chapter_table_has_a_colab_column_from_the_repository_setting():
    text = (ROOT / "README.md").read_text()
    assert publish.synced_readme(text) == text, "run `python -m gpu_utils.colab sync`"
    rows = [line for line in text.splitlines() if publish._ROW.match(line)]
    assert rows
    for row in rows:
        chapter = publish._ROW.match(row).group(2)
        assert row.endswith(f" | {publish.readme_cell(row)} |")
        assert (ROOT / chapter).exists(), f"README links {chapter}, which does not exist"


def test_readme_cells_before_and_after_publishing(unpublished):
    row = (
        "| 01 | [01_why_gpus](notebooks/01_why_gpus.ipynb) | [l](labs/01_why_gpus_lab.ipynb) | x |"
    )
    assert publish.readme_cell(row) == "[from Drive](#colab) until published"
    assert publish.synced_readme(f"{row} once published |") == f"{row} {publish.README_PENDING} |\n"
    publish.REPOSITORY, publish.REF = "me/course", "v1.0"
    cell = publish.readme_cell(row)
    assert "github/me/course/blob/v1.0/notebooks/01_why_gpus.ipynb" in cell
    assert "[lab](https://colab.research.google.com/github/me/course/blob/v1.0/labs/" in cell


# --- publishing: pyproject.toml, then one command --------------------------------------------------

PYPROJECT = """[project]
name = "x"

[tool.ruff]
line-length = 100
"""


def test_publishing_records_repository_and_tag_in_pyproject():
    assert publish.published(PYPROJECT) == (None, None)
    text = publish.with_publication(PYPROJECT, "me/course", "v1.0")
    data = tomllib.loads(text)
    assert data["project"]["urls"]["Repository"] == "https://github.com/me/course"
    assert data["tool"]["gpu-course"]["colab-ref"] == "v1.0"
    assert publish.published(text) == ("me/course", "v1.0")
    again = publish.with_publication(text, "me/other", "v1.1")
    assert publish.published(again) == ("me/other", "v1.1")
    assert again.count("[project.urls]") == 1 and again.count("colab-ref") == 1
    tomllib.loads(again)


@pytest.mark.parametrize(
    ("repository", "ref"),
    [("me", "v1"), ("me/course; rm -rf /", "v1"), ("me/course", "v1 && x"), ("me/c", "a/../b")],
)
def test_publishing_refuses_names_that_are_not_a_repository_and_a_tag(repository, ref):
    with pytest.raises(ValueError, match=r"--repository|--ref"):
        publish.with_publication(PYPROJECT, repository, ref)


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("https://github.com/me/course.git", "me/course"),
        ("git@github.com:me/course.git", "me/course"),
        ("https://gitlab.com/me/course.git", None),
        ("/srv/git/course", None),
    ],
)
def test_the_origin_remote_names_the_repository(tmp_path, remote, expected):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", remote], check=True)
    assert publish.origin_repository(tmp_path) == expected
    assert publish.origin_repository(tmp_path / "missing") is None


def test_publish_then_sync_a_scratch_tree(tmp_path, unpublished):
    tree = _tree(tmp_path, ("notebooks/00_start_here.ipynb",))
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    with pytest.raises(ValueError, match="give --repository"):
        publish.publish(None, "v1.0", tree / "pyproject.toml")
    subprocess.run(
        ["git", "-C", str(tree), "remote", "add", "origin", "git@github.com:me/course.git"],
        check=True,
    )
    assert publish.publish(None, "v1.0", tree / "pyproject.toml") == ("me/course", "v1.0")
    assert (publish.REPOSITORY, publish.REF) == ("me/course", "v1.0")
    assert publish.sync(root=tree) == ["notebooks/00_start_here.ipynb"]
    nb = nbformat.read(tree / "notebooks/00_start_here.ipynb", as_version=4)
    assert "github/me/course/blob/v1.0/notebooks/00_start_here.ipynb" in nb.cells[0].source
    readme = publish.synced_readme((tree / "README.md").read_text())
    assert "github/me/course/blob/v1.0/" in readme and "until published" not in readme


def test_the_command_line_wants_a_tag_with_a_repository(capsys):
    with pytest.raises(SystemExit):
        colab.main(["sync", "--repository", "me/course"])
    assert "--ref TAG" in capsys.readouterr().err


# --- Colab's own package set, dated: when Colab's list changes, replace the file ---------------

#: The newest dated list (backend-info-YYYY-MM-DD.txt): adding a newer one is the one step when
#: Colab changes; the tests below then say what changed.
COLAB_FREEZE = sorted((ROOT / "requirements" / "colab").glob("backend-info-*.txt"))[-1]
#: What the install plan depends on in that list; a new list that changes one of these fails here.
COLAB_KEY_PACKAGES = {
    "numpy": "2.1.3",
    "numba": "0.61.2",
    "numba-cuda": "0.22.2",
    "torch": "2.11.0+cu128",
    "triton": "3.6.0",
    "cupy-cuda12x": "14.0.1",
    "cuda-bindings": "12.9.7",
    "cuda-core": "0.3.2",
    "cudf-cu12": "26.2.1",
    "cloudpickle": "3.1.2",
}


def colab_freeze(path=COLAB_FREEZE):
    """name -> version of a googlecolab/backend-info pip freeze (names normalised as pip does)."""
    installed = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, version = line.partition("==") if "==" in line else (line.split(" @ ")[0], "", "@")
        installed[colab.normalized_name(name)] = version.strip()
    return installed


def test_colabs_dated_package_list_is_the_one_the_plan_is_tested_against():
    installed = colab_freeze()
    assert len(installed) > 600  # the whole freeze, not an excerpt
    assert "Python 3.13.15" in COLAB_FREEZE.read_text().split("absl-py")[0]
    changed = {
        name: (version, installed.get(name))
        for name, version in COLAB_KEY_PACKAGES.items()
        if installed.get(name) != version
    }
    assert not changed, f"Colab's list changed (expected, found): {changed}"


@pytest.mark.parametrize("driver", [(12, 4), (13, 0)], ids=["cuda-12-driver", "cuda-13-driver"])
def test_the_install_plan_on_colabs_package_set(driver):
    installed = colab_freeze()
    lock = (ROOT / "requirements" / "course-cu12.txt").read_text()
    pin = colab._locked(lock)["numba-cuda"]
    decided = colab.plan(driver, 1, installed, lock)
    assert decided.cuda == 12  # Colab's cuda-bindings 12.9.7: its CUDA 12 stack is kept
    assert decided.packages == [f"numba-cuda[cu12]=={pin}"]  # its cloudpickle and cupy suffice
    assert decided.fallback == [f"numba-cuda[cu12]{colab.NUMBA_CUDA_RANGE}"]
    assert decided.constraints == {  # Colab's own builds, never replaced
        "torch": "2.11.0+cu128",
        "numpy": "2.1.3",
        "cupy-cuda12x": "14.0.1",
    }
    assert not any("row_stack" in message for message in decided.messages)  # numpy < 2.5
    # The course's numba-cuda replaces Colab's 0.22.2, which cuDF 26.2.1 needs: pip says so, and
    # the install passes it on in words (pip's line as pip 24.1, Colab's pip, writes it).
    pip_says = (
        f"cudf-cu12 {installed['cudf-cu12']} requires numba-cuda<0.23,>=0.22.0, but you have "
        f"numba-cuda {pin} which is incompatible."
    )
    assert colab.conflicts(pip_says) == [
        f"cuDF (cudf-cu12) 26.2.1 requires numba-cuda<0.23,>=0.22.0, but the course installed "
        f"numba-cuda {pin}: cuDF (cudf-cu12) may not work in this runtime (the course does not "
        "use it)."
    ]


def test_the_driver_is_probed_in_one_place():
    """One driver probe (gpu_utils/driver.py): the mode, the doctor and the Colab install ask it."""
    from gpu_utils import runtime

    package = Path(colab.__file__).parent
    probing = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "cuDriverGetVersion" in path.read_text() or "cuDeviceGetCount" in path.read_text()
    )
    assert probing == ["driver.py"]
    assert runtime.probe_driver is driver_module.probe


def test_a_bare_copy_of_colab_py_loads_the_probe_from_the_course_it_copied(tmp_path):
    """The Drive set-up runs a copy of colab.py from /content, with no gpu_utils beside it: once the
    course is copied, the install loads driver.py from that copy, by its path."""
    import runpy

    copy = tmp_path / ".gpu-course-boot.py"
    copy.write_text(Path(colab.__file__).read_text())
    boot = runpy.run_path(str(copy), run_name="boot")
    probe = boot["_driver"](str(ROOT))
    assert Path(probe.__file__) == ROOT / "gpu_utils" / "driver.py"
    assert probe.cuda_version(names=("libcuda-does-not-exist.so",)) is None
    with pytest.raises(FileNotFoundError, match=r"driver\.py"):
        boot["_driver"](str(tmp_path / "no-course"))
