"""Lab generation: stubs replace solutions, outputs go, edited labs are never overwritten."""

import nbformat
import pytest

from gpu_utils import labgen


def _solution(path, body="    return a + b"):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "language": "python",
        "display_name": "Python 3",
    }
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Lab"),
        nbformat.v4.new_code_cell(
            f"def add(a, b):\n    ### BEGIN SOLUTION\n{body}\n    ### END SOLUTION",
            outputs=[nbformat.v4.new_output("stream", text="x")],
            execution_count=1,
        ),
    ]
    nbformat.write(nb, path)


@pytest.fixture
def dirs(tmp_path):
    solutions, labs = tmp_path / "solutions", tmp_path / "labs"
    solutions.mkdir()
    _solution(solutions / "01_demo_lab.ipynb")
    return solutions, labs


def _lab(labs):
    return nbformat.read(labs / "01_demo_lab.ipynb", as_version=4)


def test_solutions_become_stubs_without_outputs(dirs):
    solutions, labs = dirs
    assert labgen.write_labs(solutions, labs) == 0
    cell = _lab(labs).cells[1]
    assert "raise NotImplementedError()" in cell.source
    assert "return a + b" not in cell.source and "BEGIN SOLUTION" not in cell.source
    assert cell.outputs == [] and cell.execution_count is None
    assert labgen.stale_labs(solutions, labs) == []


def test_check_reports_stale_and_missing_labs(dirs):
    solutions, labs = dirs
    assert labgen.stale_labs(solutions, labs) == ["01_demo_lab.ipynb: missing"]
    labgen.write_labs(solutions, labs)
    _solution(solutions / "01_demo_lab.ipynb", body="    return b + a")
    assert "out of date" in labgen.stale_labs(solutions, labs)[0]
    assert labgen.main(["--check", "--solutions", str(solutions), "--labs", str(labs)]) == 1


def test_an_edited_lab_is_never_overwritten(dirs, capsys):
    solutions, labs = dirs
    labgen.write_labs(solutions, labs)
    lab = _lab(labs)
    lab.cells[1].source = lab.cells[1].source.replace("raise NotImplementedError()", "return 42")
    nbformat.write(lab, labs / "01_demo_lab.ipynb")
    _solution(solutions / "01_demo_lab.ipynb", body="    return b + a")  # the course changed too
    assert labgen.write_labs(solutions, labs) == 1
    assert "has your edits" in capsys.readouterr().err
    assert "return 42" in _lab(labs).cells[1].source


def test_force_backs_up_the_edited_lab_first(dirs):
    solutions, labs = dirs
    labgen.write_labs(solutions, labs)
    lab = _lab(labs)
    lab.cells[1].source += "\n# my notes"
    nbformat.write(lab, labs / "01_demo_lab.ipynb")
    assert labgen.write_labs(solutions, labs, force=True) == 0
    (backup,) = (labs / ".backup").glob("01_demo_lab.*.ipynb")
    assert "# my notes" in backup.read_text()
    assert "# my notes" not in _lab(labs).cells[1].source


def test_a_lab_that_was_only_run_is_regenerated(dirs):
    solutions, labs = dirs
    labgen.write_labs(solutions, labs)
    lab = _lab(labs)
    lab.cells[1].outputs = [nbformat.v4.new_output("stream", text="ran")]
    lab.cells[1].execution_count = 3
    nbformat.write(lab, labs / "01_demo_lab.ipynb")
    _solution(solutions / "01_demo_lab.ipynb", body="    return b + a")
    assert labgen.write_labs(solutions, labs) == 0
    assert labgen.stale_labs(solutions, labs) == []
