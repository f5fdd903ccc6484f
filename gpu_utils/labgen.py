"""Generate ``labs/`` from ``solutions/`` (``make labs``; ``make labs-check`` in CI).

Each solution notebook is the one source of its lab: code between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` is replaced by a stub (``raise NotImplementedError()``) with nbgrader's
ClearSolutions preprocessor, and outputs are cleared.

A learner's work is never overwritten. Every generated lab records, in its metadata, a SHA-256
fingerprint of its cells' sources as generated. If a lab's sources no longer match its
fingerprint, somebody edited it, and regeneration refuses unless ``--force`` is given; even then
the edited lab is first copied to ``labs/.backup/``. Running a lab adds only outputs, which the
fingerprint ignores, so a lab that was merely run is still regenerated.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
META_KEY = "gpu_course"
KEEP_NOTEBOOK_METADATA = ("kernelspec", "language_info")


def fingerprint(nb: nbformat.NotebookNode) -> str:
    """SHA-256 of the cells' types and sources: what a learner's edits change, outputs aside."""
    digest = hashlib.sha256()
    for cell in nb.cells:
        digest.update(cell.cell_type.encode() + b"\0" + cell.source.encode() + b"\0")
    return digest.hexdigest()


def generate(solution: Path) -> nbformat.NotebookNode:
    """The lab notebook for one solution notebook, with stubs and no outputs."""
    from nbconvert.preprocessors import ClearOutputPreprocessor
    from nbgrader.preprocessors import ClearSolutions

    nb = nbformat.read(solution, as_version=4)
    nb, _ = ClearSolutions(enforce_metadata=False).preprocess(nb, {})
    nb, _ = ClearOutputPreprocessor().preprocess(nb, {})
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        cell.metadata.pop("execution", None)
    nb.metadata = nbformat.NotebookNode(
        {k: v for k, v in nb.metadata.items() if k in KEEP_NOTEBOOK_METADATA}
    )
    nb.metadata[META_KEY] = {
        "generated_from": solution.relative_to(ROOT).as_posix()
        if solution.is_relative_to(ROOT)
        else solution.name,
        "sources_sha256": fingerprint(nb),
    }
    return nb


def lab_path(solution: Path, labs_dir: Path) -> Path:
    return labs_dir / solution.name


def is_edited(lab: nbformat.NotebookNode) -> bool:
    """True when the lab's sources differ from what was generated (a learner's work)."""
    recorded = lab.metadata.get(META_KEY, {}).get("sources_sha256")
    return recorded != fingerprint(lab)


def write_labs(solutions_dir: Path, labs_dir: Path, *, force: bool = False) -> int:
    """Regenerate every lab; return the number refused because a learner edited them."""
    labs_dir.mkdir(exist_ok=True)
    refused = 0
    for solution in sorted(solutions_dir.glob("*_lab.ipynb")):
        target = lab_path(solution, labs_dir)
        fresh = generate(solution)
        if target.exists():
            current = nbformat.read(target, as_version=4)
            if fingerprint(current) == fingerprint(fresh):
                if nbformat.writes(current) == nbformat.writes(fresh):
                    continue
            elif is_edited(current):
                if not force:
                    refused += 1
                    print(
                        f"refused: {target.relative_to(labs_dir.parent)} has your edits, so it "
                        "was not regenerated. Keep working in it, or rename it to keep it and "
                        "run `make labs` again, or run `make labs FORCE=1` (your copy is saved "
                        "to labs/.backup/ first).",
                        file=sys.stderr,
                    )
                    continue
                stamp = time.strftime("%Y%m%d-%H%M%S")
                backup = labs_dir / ".backup" / f"{target.stem}.{stamp}.ipynb"
                backup.parent.mkdir(exist_ok=True)
                shutil.copy2(target, backup)
                print(f"saved your edited lab to {backup}")
        nbformat.write(fresh, target)
        print(f"wrote {target.relative_to(labs_dir.parent)}")
    return refused


def stale_labs(solutions_dir: Path, labs_dir: Path) -> list[str]:
    """Labs that are missing or differ from what their solution generates (for CI)."""
    problems = []
    solutions = sorted(solutions_dir.glob("*_lab.ipynb"))
    for solution in solutions:
        target = lab_path(solution, labs_dir)
        if not target.exists():
            problems.append(f"{target.name}: missing")
        elif target.read_text().rstrip("\n") != nbformat.writes(generate(solution)).rstrip("\n"):
            problems.append(f"{target.name}: out of date with solutions/{solution.name}")
    names = {s.name for s in solutions}
    problems += [f"{p.name}: no solution" for p in labs_dir.glob("*.ipynb") if p.name not in names]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_utils.labgen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if labs/ is out of date")
    parser.add_argument("--force", action="store_true", help="regenerate edited labs (backed up)")
    parser.add_argument("--solutions", type=Path, default=ROOT / "solutions")
    parser.add_argument("--labs", type=Path, default=ROOT / "labs")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale_labs(args.solutions, args.labs)
        for problem in problems:
            print(f"labs/{problem}; run `make labs`", file=sys.stderr)
        return 1 if problems else 0
    return 1 if write_labs(args.solutions, args.labs, force=args.force) else 0


if __name__ == "__main__":
    sys.exit(main())
