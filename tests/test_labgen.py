"""Lab generation: stubs replace solutions, outputs go, edited labs are never overwritten."""

from pathlib import Path

import nbformat
import pytest

from gpu_utils.authoring import labgen


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


# --- which repository, which paths, and unreadable notebooks ----------------------------------


def _repository(tmp_path):
    root = tmp_path / "course"
    (root / "solutions").mkdir(parents=True)
    _solution(root / "solutions" / "01_demo_lab.ipynb")
    return root


def test_the_repository_is_the_current_directory_not_the_package(tmp_path, monkeypatch, capsys):
    root = _repository(tmp_path)
    monkeypatch.chdir(root / "solutions")  # anywhere inside the repository
    assert labgen.main([]) == 0
    assert (root / "labs" / "01_demo_lab.ipynb").exists()
    err = capsys.readouterr().err
    assert f"repository {root.resolve()}" in err
    assert "solutions from solutions/, labs in labs/" in err
    assert labgen.main(["--check"]) == 0


def test_outside_a_repository_it_stops_and_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert labgen.main([]) == 2
    assert "is not inside the course repository" in capsys.readouterr().err
    assert not (tmp_path / "labs").exists()


@pytest.mark.parametrize("form", ["relative", "absolute", "dotted"])
def test_paths_are_recorded_relative_to_the_repository_however_given(tmp_path, monkeypatch, form):
    root = _repository(tmp_path)
    monkeypatch.chdir(root)
    solutions = {
        "relative": "solutions",
        "absolute": str(root / "solutions"),
        "dotted": "./labs/../solutions",
    }[form]
    assert labgen.main(["--solutions", solutions, "--labs", "labs"]) == 0
    recorded = _lab(root / "labs").metadata[labgen.META_KEY]["generated_from"]
    assert recorded == "solutions/01_demo_lab.ipynb"
    # the same labs count as up to date whichever form the check is given
    assert labgen.stale_labs(root / "solutions", root / "labs") == []
    assert labgen.stale_labs(Path("solutions"), Path("labs")) == []


def test_a_corrupt_solution_is_named_and_the_others_are_written(tmp_path, capsys):
    root = _repository(tmp_path)
    (root / "solutions" / "00_broken_lab.ipynb").write_text('{"cells": [')
    assert labgen.write_labs(root / "solutions", root / "labs") == 1
    err = capsys.readouterr().err
    assert "solutions/00_broken_lab.ipynb could not be read" in err
    assert (root / "labs" / "01_demo_lab.ipynb").exists()
    assert not (root / "labs" / "00_broken_lab.ipynb").exists()
    problems = labgen.stale_labs(root / "solutions", root / "labs")
    assert problems == ["00_broken_lab.ipynb: missing"]
    (root / "labs" / "00_broken_lab.ipynb").write_text("{}")
    (problem,) = labgen.stale_labs(root / "solutions", root / "labs")
    assert problem.startswith("00_broken_lab.ipynb: its solution solutions/00_broken_lab.ipynb")


def test_a_corrupt_lab_is_named_and_kept_unless_forced(tmp_path, capsys):
    root = _repository(tmp_path)
    labgen.write_labs(root / "solutions", root / "labs")
    lab = root / "labs" / "01_demo_lab.ipynb"
    lab.write_text("not json at all")
    assert labgen.write_labs(root / "solutions", root / "labs") == 1
    assert "labs/01_demo_lab.ipynb is not a readable notebook" in capsys.readouterr().err
    assert lab.read_text() == "not json at all"
    assert labgen.stale_labs(root / "solutions", root / "labs")[0].endswith(
        "out of date with solutions/01_demo_lab.ipynb"
    )
    assert labgen.write_labs(root / "solutions", root / "labs", force=True) == 0
    (backup,) = (root / "labs" / ".backup").glob("01_demo_lab.*.ipynb")
    assert backup.read_text() == "not json at all"
    assert labgen.stale_labs(root / "solutions", root / "labs") == []


def test_a_labs_colab_badge_opens_the_lab_and_labgen_does_not_depend_on_colab():
    import ast

    nb = nbformat.v4.new_notebook()
    url = "https://colab.research.google.com/github/me/course/blob/v1.0"
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"[![Open In Colab](x.svg)]({url}/solutions/a_lab.ipynb)")
    ]
    labgen.point_first_cell_at_lab(nb, "a_lab.ipynb")
    assert nb.cells[0].source == f"[![Open In Colab](x.svg)]({url}/labs/a_lab.ipynb)"
    source = Path(labgen.__file__).read_text()
    imported = {
        getattr(node, "module", None) or ""
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
    }
    assert not any("colab" in name for name in imported)  # one-way: colab's sync uses labgen
