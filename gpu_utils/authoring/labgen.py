"""Generate ``labs/`` from ``solutions/`` (authoring: ``make labs``; ``make labs-check`` in CI).

Each solution notebook is the one source of its lab: code between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` is replaced by a stub (``raise NotImplementedError()``) with nbgrader's
ClearSolutions preprocessor, and outputs are cleared.

A learner's work is never overwritten. Every generated lab records, in its metadata, a SHA-256
fingerprint of its cells' sources as generated. If a lab's sources no longer match its
fingerprint, somebody edited it, and regeneration refuses unless ``--force`` is given; even then
the edited lab is first copied to ``labs/.backup/``. Running a lab adds only outputs, which the
fingerprint ignores, so a lab that was merely run is still regenerated.

The repository is the one named by the arguments (``--root``, or the folder holding
``--solutions``) or else the one containing the current directory, never the one this module was
imported from; the command says which folders it uses. A notebook that cannot be read (not valid
JSON) is reported by name and the others are still processed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

import nbformat

META_KEY = "gpu_course"
KEEP_NOTEBOOK_METADATA = ("kernelspec", "language_info", "accelerator", "colab")


def fingerprint(nb: nbformat.NotebookNode) -> str:
    """SHA-256 of the cells' types and sources: what a learner's edits change, outputs aside."""
    digest = hashlib.sha256()
    for cell in nb.cells:
        digest.update(cell.cell_type.encode() + b"\0" + cell.source.encode() + b"\0")
    return digest.hexdigest()


def find_repository(start: Path | None = None) -> Path | None:
    """The course repository containing ``start`` (default: the current directory): the nearest
    folder, from ``start`` upwards, that has a ``solutions/`` folder."""
    start = (start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / "solutions").is_dir():
            return folder
    return None


def relative(path: Path, root: Path) -> str:
    """``path`` relative to the repository, in POSIX form, however it was given."""
    return Path(os.path.relpath(Path(path).resolve(), Path(root).resolve())).as_posix()


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _unreadable(error: Exception) -> str:
    """Why a notebook could not be read or generated, in one line."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def generate(solution: Path, root: Path | None = None) -> nbformat.NotebookNode:
    """The lab notebook for one solution notebook, with stubs and no outputs.

    ``root``: the repository (default: the folder holding the solution's folder); the lab records
    the solution's path relative to it."""
    from nbconvert.preprocessors import ClearOutputPreprocessor
    from nbgrader.preprocessors import ClearSolutions

    root = Path(root) if root is not None else Path(solution).resolve().parent.parent
    nb = _read(solution)
    nb, _ = ClearSolutions(enforce_metadata=False).preprocess(nb, {})
    nb, _ = ClearOutputPreprocessor().preprocess(nb, {})
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        cell.metadata.pop("execution", None)
    nb.metadata = nbformat.NotebookNode(
        {k: v for k, v in nb.metadata.items() if k in KEEP_NOTEBOOK_METADATA}
    )
    point_first_cell_at_lab(nb, solution.name)
    nb.metadata[META_KEY] = {
        "generated_from": relative(solution, root),
        "sources_sha256": fingerprint(nb),
    }
    return nb


def point_first_cell_at_lab(nb: nbformat.NotebookNode, name: str) -> None:
    """Make the first cell's links (the "Open in Colab" badge that ``gpu_utils.colab`` writes)
    open ``labs/<name>`` instead of ``solutions/<name>``: a learner opens the lab, not the answers.
    (Plain text replacement, so lab generation does not depend on the Colab module.)"""
    if nb.cells and nb.cells[0].cell_type == "markdown":
        nb.cells[0].source = nb.cells[0].source.replace(f"/solutions/{name})", f"/labs/{name})")


def lab_path(solution: Path, labs_dir: Path) -> Path:
    return labs_dir / solution.name


def is_edited(lab: nbformat.NotebookNode) -> bool:
    """True when the lab's sources differ from what was generated (a learner's work)."""
    recorded = lab.metadata.get(META_KEY, {}).get("sources_sha256")
    return recorded != fingerprint(lab)


def write_labs(
    solutions_dir: Path, labs_dir: Path, *, force: bool = False, root: Path | None = None
) -> int:
    """Regenerate every lab; return how many were not written (refused because a learner edited
    them, or unreadable). ``root`` defaults to the folder holding ``solutions_dir``."""
    solutions_dir, labs_dir = Path(solutions_dir).resolve(), Path(labs_dir).resolve()
    root = Path(root).resolve() if root is not None else solutions_dir.parent
    labs_dir.mkdir(exist_ok=True)
    not_written = 0
    for solution in sorted(solutions_dir.glob("*_lab.ipynb")):
        target = lab_path(solution, labs_dir)
        try:
            fresh = generate(solution, root)
        except Exception as error:  # a corrupt solution: say which, and go on with the others
            not_written += 1
            print(
                f"skipped: {relative(solution, root)} could not be read or turned into a lab "
                f"({_unreadable(error)}); {relative(target, root)} was left as it is.",
                file=sys.stderr,
            )
            continue
        if target.exists():
            try:
                current = _read(target)
            except Exception as error:  # a corrupt lab may still be somebody's work
                current, problem = None, _unreadable(error)
            if current is not None and fingerprint(current) == fingerprint(fresh):
                if nbformat.writes(current) == nbformat.writes(fresh):
                    continue
            elif current is None or is_edited(current):
                if not force:
                    not_written += 1
                    why = (
                        "has your edits"
                        if current is not None
                        else f"is not a readable notebook ({problem})"
                    )
                    print(
                        f"refused: {relative(target, root)} {why}, so it was not regenerated. "
                        "Keep working in it, or rename it to keep it and run `make labs` again, "
                        "or run `make labs FORCE=1` (your copy is saved to labs/.backup/ first).",
                        file=sys.stderr,
                    )
                    continue
                stamp = time.strftime("%Y%m%d-%H%M%S")
                backup = labs_dir / ".backup" / f"{target.stem}.{stamp}.ipynb"
                backup.parent.mkdir(exist_ok=True)
                shutil.copy2(target, backup)
                print(f"saved your edited lab to {relative(backup, root)}")
        nbformat.write(fresh, target)
        print(f"wrote {relative(target, root)}")
    return not_written


def stale_labs(solutions_dir: Path, labs_dir: Path, root: Path | None = None) -> list[str]:
    """Labs that are missing, unreadable or differ from what their solution generates (for CI)."""
    solutions_dir, labs_dir = Path(solutions_dir).resolve(), Path(labs_dir).resolve()
    root = Path(root).resolve() if root is not None else solutions_dir.parent
    problems = []
    solutions = sorted(solutions_dir.glob("*_lab.ipynb"))
    for solution in solutions:
        target = lab_path(solution, labs_dir)
        where = relative(solution, root)
        if not target.exists():
            problems.append(f"{target.name}: missing")
            continue
        try:
            fresh = nbformat.writes(generate(solution, root)).rstrip("\n")
        except Exception as error:
            problems.append(
                f"{target.name}: its solution {where} is unreadable ({_unreadable(error)})"
            )
            continue
        if target.read_text(errors="replace").rstrip("\n") != fresh:
            problems.append(f"{target.name}: out of date with {where}")
    names = {s.name for s in solutions}
    problems += [f"{p.name}: no solution" for p in labs_dir.glob("*.ipynb") if p.name not in names]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpu_utils.authoring.labgen", description=__doc__
    )
    parser.add_argument("--check", action="store_true", help="fail if labs/ is out of date")
    parser.add_argument("--force", action="store_true", help="regenerate edited labs (backed up)")
    parser.add_argument(
        "--root",
        type=Path,
        help="the course repository (default: the one holding --solutions, "
        "else the one containing the current directory)",
    )
    parser.add_argument("--solutions", type=Path, help="default: ROOT/solutions")
    parser.add_argument("--labs", type=Path, help="default: ROOT/labs")
    args = parser.parse_args(argv)
    root = args.root or (args.solutions.resolve().parent if args.solutions else find_repository())
    if root is None:
        print(
            f"labgen: {Path.cwd()} is not inside the course repository (no solutions/ folder here "
            "or above). Run it from the repository, or pass --root.",
            file=sys.stderr,
        )
        return 2
    root = Path(root).resolve()
    solutions = (args.solutions or root / "solutions").resolve()
    labs = (args.labs or root / "labs").resolve()
    print(
        f"labgen: repository {root}: solutions from {relative(solutions, root)}/, labs in "
        f"{relative(labs, root)}/",
        file=sys.stderr,
    )
    if args.check:
        problems = stale_labs(solutions, labs, root)
        for problem in problems:
            print(f"{relative(labs, root)}/{problem}; run `make labs`", file=sys.stderr)
        return 1 if problems else 0
    return 1 if write_labs(solutions, labs, force=args.force, root=root) else 0


if __name__ == "__main__":
    sys.exit(main())
