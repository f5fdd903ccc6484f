"""Notebook conventions that nbval does not check: one top-to-bottom run, the first import,
labs generated and up to date, and lab check cells that report 'not attempted yet'."""

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import ROOT
from gpu_utils.authoring import labgen

EXECUTED = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (ROOT / "solutions").glob("*.ipynb")
)
LABS = sorted((ROOT / "labs").glob("*.ipynb"))


def _code_cells(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def _name(path):
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", EXECUTED, ids=_name)
def test_outputs_come_from_one_top_to_bottom_run(path):
    counts = [c.execution_count for c in _code_cells(path) if c.source.strip()]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{_name(path)}: execution counts {counts} are not 1, 2, 3, ...: run `make execute`"
    )


@pytest.mark.parametrize("path", EXECUTED + LABS, ids=_name)
def test_first_code_cell_imports_gpu_utils(path):
    cells = _code_cells(path)
    assert "import gpu_utils as gu" in cells[0].source
    assert not any("sys.path" in c.source for c in cells)


@pytest.mark.parametrize("path", LABS, ids=_name)
def test_labs_carry_no_outputs(path):
    for cell in _code_cells(path):
        assert cell.outputs == [] and cell.execution_count is None


def test_labs_are_generated_from_solutions_and_up_to_date():
    assert LABS, "labs/ is empty: run `make labs`"
    assert labgen.stale_labs(ROOT / "solutions", ROOT / "labs") == []


@pytest.mark.parametrize("path", LABS, ids=_name)
def test_lab_check_cells_say_not_attempted_yet(path):
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(path.parent)}}).execute()
    checks = [c for c in nb.cells if c.cell_type == "code" and "gu.exercises.check(" in c.source]
    assert checks, f"{_name(path)} has no check cells"
    for cell in checks:
        text = "".join(
            o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in cell.outputs
        )
        assert "not attempted yet" in text, f"{_name(path)}: {cell.source!r} printed {text!r}"
