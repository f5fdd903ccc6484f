"""The package's table of contents (authoring; CONTRIBUTING, "Where things go"): which chapter
each public module of ``gpu_utils`` belongs to, and every ``gu.<name>`` the course's notebooks use.

    python -m gpu_utils.authoring.contents          # print both tables (Markdown)
    python -m gpu_utils.authoring.contents --write  # put them in CONTRIBUTING.md, between its markers
    python -m gpu_utils.authoring.contents --check  # exit 1 when CONTRIBUTING.md's copy is out of date

The chapters come from each module's own docstring, read without importing the module: its first
two paragraphs name the chapter(s) ("chapter 04", "chapters 09 and 10", "chapters 09-11"), or say
which part of the course's machinery the module is ("course machinery" or "authoring").
``tests/test_package.py`` fails for a public module that does neither, for a ``gu.<name>`` of a
notebook, a lab or a solution that no longer resolves, and for a stale copy in CONTRIBUTING.
The first table follows the tree: the top level (the course itself: runtime, device, doctor,
progress, bench, the Colab boot file), then each subpackage (its ``__init__``) and its modules;
``sim`` and ``exercises`` count as one module each (an engine and its private parts), plus the
modules a ``gu.<name>`` alias names. The second table gives every ``gu.<name>`` a notebook uses
and where it lives (the permanent aliases are ``gpu_utils.ALIASES``).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
ROOT = PACKAGE.parent
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
BEGIN = (
    "<!-- BEGIN gpu_utils.authoring.contents (python -m gpu_utils.authoring.contents --write) -->"
)
END = "<!-- END gpu_utils.authoring.contents -->"
NOTEBOOK_FOLDERS = ("notebooks", "solutions", "labs")
MACHINERY = ("course machinery", "authoring")

_CHAPTERS = re.compile(r"\b[Cc]hapters?\s+(\d\d[a-z]?(?:(?:\s*,\s*|\s+and\s+|\s*-\s*)\d\d[a-z]?)*)")
_NUMBER = re.compile(r"\d\d[a-z]?")
_USE = re.compile(r"\bgu\.([A-Za-z]\w*)")


#: Subpackages listed as one entry (their ``__init__``): an engine and its private parts.
WHOLE = ("exercises", "sim")


def public_modules() -> list[str]:
    """The package's public modules, by dotted name below ``gpu_utils`` (``one_gpu.trace``), in
    tree order: the top level's modules, then each subpackage and its public modules. The
    subpackages of :data:`WHOLE` are one entry, plus any module a ``gu.<name>`` alias names."""
    aliases = _aliases()
    aliased = set(aliases.values())
    # a top-level module named like an alias is a command kept at its first name (a shim)
    top = sorted(
        p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_") and p.stem not in aliases
    )
    names = list(top)
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        package = init.parent.name
        names.append(package)
        for path in sorted(init.parent.glob("*.py")):
            dotted = f"{package}.{path.stem}"
            if path.stem.startswith("_"):
                continue
            if package not in WHOLE or dotted in aliased:
                names.append(dotted)
    return names


def _source(name: str) -> Path:
    folder = PACKAGE.joinpath(*name.split("."))
    return folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")


def _aliases() -> dict[str, str]:
    """``gu.<name>`` -> module below ``gpu_utils``: the package's ``ALIASES``, read from its
    source (nothing is imported)."""
    for node in ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "ALIASES" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    return {}


def docstring(name: str) -> str:
    """A module's docstring, read from its source (nothing is imported)."""
    tree = ast.parse(_source(name).read_text(encoding="utf-8"))
    return ast.get_docstring(tree) or ""


def _head(text: str) -> str:
    """The first two paragraphs, on one line."""
    return " ".join(" ".join(text.split("\n\n")[:2]).split())


def chapters(text: str) -> list[str]:
    """The chapters a docstring's first two paragraphs name, in course order ("09-11": 09, 10, 11)."""
    found: set[str] = set()
    for match in _CHAPTERS.finditer(_head(text)):
        group = match.group(1)
        numbers = _NUMBER.findall(group)
        found.update(numbers)
        for low, high in re.findall(r"(\d\d)\s*-\s*(\d\d)", group):
            found.update(f"{n:02d}" for n in range(int(low), int(high) + 1))
    return sorted(found, key=lambda c: (int(c[:2]), c[2:]))


def role(text: str) -> str | None:
    """ "course machinery" or "authoring" when the first two paragraphs say so, else None."""
    head = _head(text).lower()
    return next((word for word in MACHINERY if word in head), None)


def summary(text: str) -> str:
    """The docstring's first sentence (up to its first period followed by a space)."""
    first = " ".join(text.split("\n\n")[0].split())
    cut = re.search(r"(?<!\be\.g)(?<!\bi\.e)\.(\s|$)", first)
    return (first[: cut.start() + 1] if cut else first).replace("|", "\\|")


def used_names(root: Path = ROOT) -> dict[str, list[str]]:
    """Every ``gu.<name>`` in the code cells of the notebooks, labs and solutions, with the
    chapters (notebook prefixes) that use it."""
    uses: dict[str, set[str]] = {}
    for folder in NOTEBOOK_FOLDERS:
        for path in sorted((root / folder).glob("*.ipynb")):
            chapter = path.name.split("_")[0]
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            for cell in cells:
                if cell["cell_type"] == "code":
                    for name in _USE.findall("".join(cell["source"])):
                        uses.setdefault(name, set()).add(chapter)
    return {name: sorted(found) for name, found in sorted(uses.items())}


def _package_names() -> dict[str, str]:
    """The names the package's ``__init__`` binds itself: name -> where it comes from."""
    found: dict[str, str] = {}
    for node in ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = f"`gpu_utils.{node.module}.{alias.name}`"
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = "`gpu_utils` (`__init__`)"
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = "`gpu_utils` (`__init__`)"
    return found


def _where(name: str) -> str:
    """Where ``gu.<name>`` lives: what the package's ``__init__`` binds it to, its alias, else its
    module."""
    aliases = _aliases()
    if name in aliases:
        return f"`gpu_utils.{aliases[name]}`"
    return _package_names().get(name) or (
        f"`gpu_utils.{name}`" if _source(name).exists() else "**nowhere**"
    )


def index() -> str:
    """Both tables, as the Markdown block CONTRIBUTING holds."""
    lines = [
        BEGIN,
        "",
        "| module | chapters | what it does |",
        "|---|---|---|",
    ]
    for name in public_modules():
        text = docstring(name)
        found = ", ".join(chapters(text)) or role(text) or "**none: say it in the docstring**"
        lines.append(f"| `{name}` | {found} | {summary(text)} |")
    lines += [
        "",
        "Every `gu.<name>` the notebooks, labs and solutions use (a permanent name: when a module",
        "moves, `gu.<name>` keeps working; tests/test_package.py imports each):",
        "",
        "| `gu.<name>` | lives in | used in chapters |",
        "|---|---|---|",
    ]
    for name, where in used_names().items():
        lines.append(f"| `gu.{name}` | {_where(name)} | {', '.join(where)} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def _contributing_block(text: str) -> str | None:
    start, stop = text.find(BEGIN), text.find(END)
    if start < 0 or stop < 0:
        return None
    return text[start : stop + len(END)] + "\n"


def write(path: Path = CONTRIBUTING) -> bool:
    """Replace the block between the markers with :func:`index`; True when it changed."""
    text = path.read_text(encoding="utf-8")
    old = _contributing_block(text)
    if old is None:
        raise SystemExit(f"{path.name} has no {BEGIN!r} ... {END!r} block: add the two markers")
    new = index()
    if old == new:
        return False
    path.write_text(text.replace(old, new), encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpu_utils.authoring.contents", description=__doc__
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="update CONTRIBUTING.md")
    action.add_argument("--check", action="store_true", help="exit 1 when it is out of date")
    args = parser.parse_args(argv)
    if args.write:
        print("CONTRIBUTING.md updated" if write() else "CONTRIBUTING.md already up to date")
        return 0
    if args.check:
        current = _contributing_block(CONTRIBUTING.read_text(encoding="utf-8"))
        if current != index():
            print(
                "CONTRIBUTING.md's module index is out of date: python -m gpu_utils.authoring.contents --write"
            )
            return 1
        print("CONTRIBUTING.md's module index is up to date")
        return 0
    print(index(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
