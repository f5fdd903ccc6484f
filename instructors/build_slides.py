"""Build reveal.js slides of every chapter that work offline (`make slides`).

    python instructors/build_slides.py ASSETS OUT

ASSETS is a node_modules folder holding the packages of instructors/package.json (reveal.js,
requirejs, jquery, mathjax; `make slides` installs them with npm). Each chapter becomes
OUT/NN_topic.slides.html with every script and stylesheet pointing into OUT (copied from ASSETS),
never to a CDN; the build fails if any remains external.

Cells are tagged for slides here, from the notebook's structure, unless a cell already carries
``slideshow`` metadata (an author's choice wins): a markdown cell opening with a `#` or `##`
heading starts a slide, one with `###` a sub-slide, every other cell continues the slide; the
"Open in Colab" badge is skipped. Saved widget state is dropped (widgets need a live kernel).
"""

import re
import shutil
import sys
from pathlib import Path

import nbformat
from nbconvert import SlidesExporter

from gpu_utils.authoring.publish import is_badge_cell

ROOT = Path(__file__).resolve().parent.parent
#: A chapter's file name: two digits, an optional letter (``08b_pytorch_primer``), the topic.
CHAPTER_NAME = re.compile(r"\d\d[a-z]?_\w+\.ipynb")
URLS = {
    "reveal_url_prefix": "reveal.js",
    "reveal_theme": "white",  # its font ships with reveal.js ("simple" fetches Google fonts)
    "require_js_url": "requirejs/require.js",
    "jquery_url": "jquery/jquery.min.js",
    "mathjax_url": "mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
}
MERMAID = re.compile(r"<script type=\"module\">[^<]*mermaid[^<]*</script>", re.S)
# numba's annotated-source HTML output links an icon font from a CDN (cosmetic: dropped)
ICON_FONT = re.compile(r"<link[^>]*font-awesome[^>]*>", re.S)
EXTERNAL = re.compile(r"<(?:script|link)\b[^>]*(?:src|href)=[\"'](?:https?:)?//[^\"']+", re.I)


def slide_type(cell) -> str:
    if is_badge_cell(cell):  # the Colab badge, or the sentence saying it will come
        return "skip"
    if cell.cell_type == "markdown":
        first = cell.source.lstrip().split("\n", 1)[0]
        if re.match(r"#{1,2} ", first):
            return "slide"
        if first.startswith("### "):
            return "subslide"
    return "-"


def tag(nb):
    for cell in nb.cells:
        if "slideshow" not in cell.metadata:
            cell.metadata["slideshow"] = {"slide_type": slide_type(cell)}
    nb.metadata.pop("widgets", None)
    return nb


def external_assets(html: str) -> list[str]:
    """Scripts and stylesheets the page would fetch from another host."""
    return EXTERNAL.findall(html)


def convert(path: Path, out: Path) -> Path:
    exporter = SlidesExporter(**URLS)
    nb = tag(nbformat.read(path, as_version=4))
    html, _ = exporter.from_notebook_node(nb)
    if "mermaid" not in "".join(c.source for c in nb.cells if c.cell_type == "markdown"):
        html = MERMAID.sub("", html)  # nbconvert imports mermaid from a CDN on every page
    html = ICON_FONT.sub("", html)
    target = out / f"{path.stem}.slides.html"
    target.write_text(html)
    return target


def copy_assets(assets: Path, out: Path) -> None:
    skip = shutil.ignore_patterns("unpacked", "png", "*.map", "test", "docs", "examples")
    for folder, parts in {
        "reveal.js": ("dist", "plugin"),
        "requirejs": ("require.js",),
        "jquery": ("dist/jquery.min.js",),
        "mathjax": ("MathJax.js", "config", "jax", "extensions", "fonts/HTML-CSS/TeX/woff"),
    }.items():
        for part in parts:
            source, target = assets / folder / part, out / folder / Path(part).name
            if folder == "mathjax" and part.startswith("fonts"):
                target = out / folder / part
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True, ignore=skip)
            else:
                shutil.copy2(source, target)


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks in course order (08 before 08b before 09)."""
    return sorted(p for p in (root / "notebooks").glob("*.ipynb") if CHAPTER_NAME.fullmatch(p.name))


def main(assets: str, out: str) -> int:
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    copy_assets(Path(assets), out_dir)
    problems = []
    for chapter in chapters():
        target = convert(chapter, out_dir)
        problems += [f"{target.name}: {ref}" for ref in external_assets(target.read_text())]
        print(f"wrote {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
    for problem in problems:
        print(f"external asset (the slides would not work offline): {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
