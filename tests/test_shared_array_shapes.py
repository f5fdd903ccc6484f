"""Every kernel the course ships compiles for a GPU, not only on the simulator: the shape of a
``cuda.shared.array`` or ``cuda.local.array`` must be numbers or global constants. numba's CUDA
compiler rejects an expression such as ``TILE + 1`` there, while the simulator runs it."""

import ast
import json

import pytest

from conftest import ROOT

SOURCES = sorted(ROOT.glob("benchmarks/*.py")) + sorted(ROOT.glob("gpu_utils/**/*.py"))
NOTEBOOKS = sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("solutions/*.ipynb"))


def _simple(node: ast.AST) -> bool:
    if isinstance(node, ast.Tuple):
        return all(_simple(element) for element in node.elts)
    return isinstance(node, (ast.Constant, ast.Name))


def _bad_shapes(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics in a notebook cell
        return []
    bad = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "array"
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr in ("shared", "local")
        ):
            shape = (
                node.args[0]
                if node.args
                else next((k.value for k in node.keywords if k.arg == "shape"), None)
            )
            if shape is not None and not _simple(shape):
                bad.append(f"line {node.lineno}: {ast.unparse(node)}")
    return bad


def test_the_check_finds_an_expression_in_a_shape():
    kernel = "def k(x):\n    t = cuda.shared.array((TILE, TILE + 1), float32)\n"
    assert _bad_shapes(kernel) == ["line 2: cuda.shared.array((TILE, TILE + 1), float32)"]
    assert _bad_shapes("t = cuda.shared.array((TILE, PADDED), float32)") == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_sources(path):
    assert _bad_shapes(path.read_text()) == [], "use a global constant (PADDED = TILE + 1)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_cells(path):
    cells = json.loads(path.read_text())["cells"]
    bad = [
        f"cell {i}, {problem}"
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "code"
        for problem in _bad_shapes("".join(cell["source"]))
    ]
    assert bad == [], "use a global constant (PADDED = TILE + 1)"
