"""Where the course is published, and the notebooks' Colab parts (authoring; chapter 00, "Running
the course elsewhere"; README, "Publishing").

Where the course is published is said once, in ``pyproject.toml``: ``[project.urls] Repository``
(``https://github.com/OWNER/NAME``) and ``[tool.gpu-course] colab-ref``, the release tag the
notebooks were built for. Until both are set (the course has no public home yet) ``REPOSITORY``
is None: notebooks say "Colab link available once the course is published" instead of a badge,
and their install cell takes the course from the learner's Google Drive; nothing points at an
address that somebody else could register. A maintainer publishes with one command,
``python -m gpu_utils.colab sync --repository OWNER/NAME --ref TAG`` (the repository defaults to
``git remote get-url origin``), which records both in ``pyproject.toml`` and rewrites every
notebook's "Open in Colab" badge, GPU-runtime metadata and install cell
(:mod:`gpu_utils.authoring.install_cell`), the labs and the README's table; then commit, tag that
commit TAG and push both. ``sync --check`` lists what is out of step. ``bundle`` writes the
course's zip for Google Drive (:mod:`gpu_utils.authoring.colab_bundle`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ..colab import ROOT
from .install_cell import BLOCK_HEADER, install_block

PYPROJECT = ROOT / "pyproject.toml"
COLAB_BADGE_SVG = "https://colab.research.google.com/assets/colab-badge.svg"
PENDING = "Colab link available once the course is published."
DRIVE_HINT = 'open it in Colab from your Google Drive (README, "Colab").'  # in the badge's place
_REPOSITORY_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_REF_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


# --- where the course is published: pyproject.toml, the one source of truth ----------------------


def _section(text: str, name: str) -> tuple[int, int] | None:
    """(start, end) of a TOML table's body, ``[name]`` excluded; None when absent."""
    header = re.search(rf"^\[{re.escape(name)}\][ \t]*$", text, re.M)
    if header is None:
        return None
    following = re.search(r"^\[", text[header.end() :], re.M)
    return header.end(), header.end() + following.start() if following else len(text)


def _value(text: str, table: str, key: str) -> str | None:
    span = _section(text, table)
    if span is None:
        return None
    found = re.search(rf'^{re.escape(key)}\s*=\s*"([^"]*)"', text[span[0] : span[1]], re.M)
    return found.group(1) if found else None


def repository_name(url_or_name: str) -> str | None:
    """``OWNER/NAME`` from a GitHub address (https, ssh or ``OWNER/NAME`` itself), else None."""
    text = url_or_name.strip()
    found = re.match(
        r"^(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)?"
        r"([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$",
        text,
    )
    if not found or ("github.com" not in text and text.count("/") != 1):
        return None
    return found.group(1)


def published(text: str | None = None) -> tuple[str | None, str | None]:
    """(OWNER/NAME, TAG) from pyproject.toml; (None, None) until both are set."""
    if text is None:
        try:
            text = PYPROJECT.read_text()
        except OSError:  # an installed package without its repository
            return None, None
    url = _value(text, "project.urls", "Repository")
    ref = _value(text, "tool.gpu-course", "colab-ref")
    repository = repository_name(url) if url else None
    if repository is None or not ref:
        return None, None
    return repository, ref


def check_publication(repository: str, ref: str) -> None:
    """Raise ValueError, saying what to give, unless ``repository`` is OWNER/NAME and ``ref`` a tag
    name (both end up in a shell command of the install cell, so nothing else is accepted)."""
    if not _REPOSITORY_NAME.match(repository or ""):
        raise ValueError(
            f"--repository {repository!r} is not OWNER/NAME on GitHub (e.g. my-org/gpus-for-ml)."
        )
    if not ref or not _REF_NAME.match(ref) or ".." in ref or ref.endswith((".lock", ".")):
        raise ValueError(f"--ref {ref!r} is not a tag name (e.g. v1.0).")


def with_publication(text: str, repository: str, ref: str) -> str:
    """pyproject.toml's text with ``[project.urls] Repository`` and ``colab-ref`` set."""
    check_publication(repository, ref)
    for table, key, value in (
        ("project.urls", "Repository", f"https://github.com/{repository}"),
        ("tool.gpu-course", "colab-ref", ref),
    ):
        line = f'{key} = "{value}"'
        span = _section(text, table)
        if span is None:
            block = f"[{table}]\n{line}\n\n"
            tools = re.search(r"^\[tool\.", text, re.M)
            if table == "project.urls" and tools:
                text = text[: tools.start()] + block + text[tools.start() :]
            else:
                text = text.rstrip("\n") + "\n\n" + block.rstrip("\n") + "\n"
            continue
        body = text[span[0] : span[1]]
        if re.search(rf"^{re.escape(key)}\s*=", body, re.M):
            body = re.sub(rf"^{re.escape(key)}\s*=.*$", line, body, count=1, flags=re.M)
        else:
            body = "\n" + line + body
        text = text[: span[0]] + body + text[span[1] :]
    return text


def origin_repository(cwd: Path = ROOT) -> str | None:
    """OWNER/NAME of ``git remote get-url origin`` when it is on GitHub, else None."""
    try:
        url = subprocess.run(
            ["git", "remote", "get-url", "origin"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return repository_name(url.stdout) if url.returncode == 0 and url.stdout.strip() else None


REPOSITORY, REF = published()


# --- badges, metadata and the install block, from pyproject.toml ----------------------------------


def project_version(text: str | None = None) -> str | None:
    """``[project] version`` of pyproject.toml: the version a bundle and a notebook belong to."""
    if text is None:
        try:
            text = PYPROJECT.read_text()
        except OSError:
            return None
    return _value(text, "project", "version")


VERSION = project_version()


def cell_block() -> str:
    """The install cell's lines for the course as pyproject.toml records it now."""
    if REPOSITORY is not None and REF is not None:
        check_publication(REPOSITORY, REF)
    return install_block(REPOSITORY, REF, VERSION)


def colab_url(relpath: str, repository: str | None = None, ref: str | None = None) -> str:
    """The address that opens ``relpath`` of the published course in Colab."""
    repository, ref = repository or REPOSITORY, ref or REF
    if repository is None or ref is None:
        raise ValueError(f"the course is not published yet: {PENDING}")
    return f"https://colab.research.google.com/github/{repository}/blob/{ref}/{relpath}"


def badge(relpath: str) -> str:
    """The first cell's markdown: the "Open in Colab" badge for the notebook at ``relpath``, or,
    until the course is published, a sentence saying that the link will come."""
    if REPOSITORY is None:
        return f"*{PENDING} Until then, {DRIVE_HINT}*"
    return f"[![Open In Colab]({COLAB_BADGE_SVG})]({colab_url(relpath)})"


GPU_METADATA = {"accelerator": "GPU", "colab": {"gpuType": "T4"}}


def _first_code_cell(nb):
    return next((c for c in nb.cells if c.cell_type == "code"), None)


def _strip_block(source: str) -> str:
    if not source.startswith(BLOCK_HEADER):
        return source
    lines = source.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.startswith("import gpu_utils"):
            return "".join(lines[index:])
    return ""


def is_badge_cell(cell) -> bool:
    """The first cell that :func:`synced` writes: a badge, or the sentence saying one will come."""
    return cell.cell_type == "markdown" and (
        COLAB_BADGE_SVG in cell.source or PENDING in cell.source
    )


def synced(nb, relpath: str):
    """The notebook with its badge, GPU metadata and install block as pyproject.toml says."""
    import copy

    import nbformat

    nb = copy.deepcopy(nb)
    if nb.cells and is_badge_cell(nb.cells[0]):
        nb.cells[0].source = badge(relpath)
    else:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(badge(relpath)))
        nb.cells[0].pop("id", None)
        if nb.nbformat_minor >= 5:
            nb.cells[0]["id"] = "open-in-colab"
    nb.metadata["accelerator"] = GPU_METADATA["accelerator"]
    nb.metadata["colab"] = {**nb.metadata.get("colab", {}), **GPU_METADATA["colab"]}
    cell = _first_code_cell(nb)
    if cell is not None:
        cell.source = cell_block() + _strip_block(cell.source)
    return nb


def _relpath(path: Path, root: Path = ROOT) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix()


def _default_paths(root: Path = ROOT) -> list[Path]:
    return sorted((root / "notebooks").glob("*.ipynb")) + sorted(
        (root / "solutions").glob("*.ipynb")
    )


def stale(paths: list[Path] | None = None, root: Path = ROOT) -> list[str]:
    """Notebooks (and labs of the given solutions) whose badge, metadata or block is out of step."""
    import nbformat

    from . import labgen

    problems = []
    for path in [p.resolve() for p in paths or _default_paths(root)]:
        nb = nbformat.read(path, as_version=4)
        if nbformat.writes(synced(nb, _relpath(path, root))) != nbformat.writes(nb):
            problems.append(_relpath(path, root))
        if path.parent.name == "solutions":
            lab = root / "labs" / path.name
            fresh = nbformat.writes(labgen.generate(path, root)).rstrip("\n")
            if not lab.exists() or lab.read_text().rstrip("\n") != fresh:
                problems.append(
                    _relpath(lab, root) if lab.exists() else f"labs/{path.name} (missing)"
                )
    return problems


def sync(paths: list[Path] | None = None, root: Path = ROOT) -> list[str]:
    """Rewrite badges, metadata and install blocks; regenerate the labs of the solutions given.
    Returns what was written. Only the first cells and metadata change: outputs stay."""
    import nbformat

    from . import labgen

    written = []
    for path in [p.resolve() for p in paths or _default_paths(root)]:
        nb = nbformat.read(path, as_version=4)
        new = synced(nb, _relpath(path, root))
        if nbformat.writes(new) != nbformat.writes(nb):
            nbformat.write(new, path)
            written.append(_relpath(path, root))
        if path.parent.name == "solutions":
            lab = root / "labs" / path.name
            if lab.exists() and labgen.is_edited(nbformat.read(lab, as_version=4)):
                print(
                    f"skipped {_relpath(lab, root)}: it has edits (regenerate with "
                    "`make labs FORCE=1`)"
                )
                continue
            fresh = labgen.generate(path, root)
            if not lab.exists() or lab.read_text().rstrip("\n") != nbformat.writes(fresh).rstrip(
                "\n"
            ):
                lab.parent.mkdir(exist_ok=True)
                nbformat.write(fresh, lab)
                written.append(_relpath(lab, root))
    return written


README = ROOT / "README.md"

_ROW = re.compile(r"^\| (\d\d[a-z]?) \| \[[^]]+\]\((notebooks/[^)]+\.ipynb)\)")

README_PENDING = "[from Drive](#colab) until published"

_OLD_PENDING = ("once published",)  # what earlier versions wrote there: replaced, not repeated


def readme_cell(row: str) -> str:
    """The README table's Colab cell for one chapter row: a badge for the chapter, links for its
    lab and solution (when the row lists them); until the course is published, a link to the
    README's Colab section, which says how to use the course from Google Drive."""
    if REPOSITORY is None:
        return README_PENDING
    chapter = _ROW.match(row).group(2)
    parts = [f"[![Open In Colab]({COLAB_BADGE_SVG})]({colab_url(chapter)})"]
    for kind in ("labs", "solutions"):
        found = re.search(rf"\(({kind}/[^)]+\.ipynb)\)", row)
        if found:
            parts.append(f"[{kind[:-1]}]({colab_url(found.group(1))})")
    return " ".join(parts)


def synced_readme(text: str) -> str:
    """README with a Colab column in the chapter table, rebuilt from pyproject.toml."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        cells = line.rstrip().rstrip("|").split(" | ")
        if line.startswith("| # | Chapter |"):
            lines[index] = line if "| Colab |" in line else line.rstrip() + " Colab |"
        elif line.startswith("|---|") and index and lines[index - 1].startswith("| # | Chapter |"):
            columns = lines[index - 1].count("|") - 1
            lines[index] = "|" + "---|" * columns
        elif _ROW.match(line):
            last = cells[-1].strip()
            if "colab.research.google.com" in last or last in (README_PENDING, *_OLD_PENDING):
                cells = cells[:-1]
            lines[index] = " | ".join(cells).rstrip() + f" | {readme_cell(line)} |"
    return "\n".join(lines) + "\n"


def publish(repository: str | None, ref: str, pyproject: Path = PYPROJECT) -> tuple[str, str]:
    """Record where the course is published (``repository`` defaults to the origin remote) in
    pyproject.toml, and make this module use it. Returns (OWNER/NAME, TAG)."""
    global REPOSITORY, REF
    repository = repository or origin_repository(pyproject.parent)
    if repository is None:
        raise ValueError(
            "no --repository given and `git remote get-url origin` names no GitHub repository: "
            "give --repository OWNER/NAME."
        )
    pyproject.write_text(with_publication(pyproject.read_text(), repository, ref))
    REPOSITORY, REF = published(pyproject.read_text())
    return repository, ref


def main(argv: list[str] | None = None) -> int:
    """``python -m gpu_utils.colab sync`` and ``bundle`` (:func:`gpu_utils.colab.main` hands them
    here)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gpu_utils.colab", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    sync_cmd = commands.add_parser("sync", help="rewrite badges, GPU metadata, install blocks")
    sync_cmd.add_argument("paths", nargs="*", type=Path, help="default: notebooks/ and solutions/")
    sync_cmd.add_argument("--check", action="store_true", help="only list what is out of step")
    sync_cmd.add_argument(
        "--repository", help="publish: OWNER/NAME on GitHub (default: the origin remote)"
    )
    sync_cmd.add_argument("--ref", help="publish: the release tag the notebooks will clone")
    bundle_cmd = commands.add_parser("bundle", help="write the course's zip for Google Drive")
    bundle_cmd.add_argument("--out", type=Path, required=True, help="the folder to write it in")
    args = parser.parse_args(argv)
    if args.command == "bundle":
        from . import colab_bundle

        try:
            written = colab_bundle.bundle(args.out)
        except ValueError as error:
            parser.error(str(error))
        print(f"wrote {written}")
        return 0
    if args.repository and not args.ref:
        parser.error("--repository needs --ref TAG: the notebooks clone exactly that release")
    if args.ref:
        if args.check:
            parser.error("--check compares with pyproject.toml; publish without --check")
        try:
            repository, ref = publish(args.repository, args.ref)
        except ValueError as error:
            parser.error(str(error))
        print(f"pyproject.toml: the course is published at github.com/{repository}, tag {ref}")
    readme_stale = README.read_text() != synced_readme(README.read_text())
    if args.check:
        problems = stale(args.paths) + (["README.md"] if readme_stale else [])
        for problem in problems:
            print(f"{problem}: out of step; run `python -m gpu_utils.colab sync`", file=sys.stderr)
        return 1 if problems else 0
    for written in sync(args.paths):
        print(f"wrote {written}")
    if readme_stale:
        README.write_text(synced_readme(README.read_text()))
        print("wrote README.md")
    if args.ref:
        print(
            f"Next: commit, then `git tag {args.ref} && git push origin HEAD {args.ref}` (the "
            "badges open, and the install cells clone, that tag)."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
