"""The kernels that benchmarks/ times are copies of lab and chapter cells (issue 31): each one is
compared with its source cell as a normalised AST, so a change to the logic of either side fails
here instead of drifting silently. Decorators, docstrings, comments and formatting are ignored.
The notebooks are read as JSON and parsed, never executed; the benchmark files are parsed, never
imported (no numba or triton needed)."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field

import pytest

from conftest import ROOT

BENCHMARK_FILES = (
    "benchmarks/kernels_ch04.py",
    "benchmarks/kernels_ch05.py",
    "benchmarks/kernels_ch06.py",
    "benchmarks/ch12_triton.py",
)


@dataclass(frozen=True)
class Copy:
    notebook: str | None  # None: not a copy of any cell (then `why` says what it is)
    function: str | None = None  # the function's name in the notebook
    # names renamed in the benchmark file: {name in the notebook: name in the benchmark}
    renamed: dict[str, str] = field(default_factory=dict)
    why: str = ""
    # True: a renamed constant holds a different value on purpose (``why`` says so)
    value_differs: bool = False


#: benchmark file, kernel name (a factory's inner kernel by its own name) -> its source.
TABLE: dict[tuple[str, str], Copy] = {
    ("benchmarks/kernels_ch04.py", "copy_grid_stride"): Copy(
        "solutions/04_memory_lab.ipynb", "copy_grid_stride"
    ),
    ("benchmarks/kernels_ch04.py", "transpose_naive"): Copy(
        "notebooks/04_memory.ipynb", "transpose_naive"
    ),
    ("benchmarks/kernels_ch04.py", "transpose_tiled"): Copy(
        "solutions/04_memory_lab.ipynb", "transpose_tiled"
    ),
    ("benchmarks/kernels_ch04.py", "transpose_tiled_unpadded"): Copy(
        "solutions/04_memory_lab.ipynb",
        "transpose_tiled",
        renamed={"PADDED": "TILE"},
        value_differs=True,
        why="the lab's padded tile without its padding column, to time the bank conflicts",
    ),
    ("benchmarks/kernels_ch04.py", "stencil_shared"): Copy(
        "solutions/04_memory_lab.ipynb",
        "stencil_shared",
        renamed={"TILE_CELLS": "STENCIL_CELLS"},
        why="the module also holds the transpose's TILE, so the stencil's cell count is named "
        "for the stencil (the same STENCIL_THREADS + 2)",
    ),
    ("benchmarks/kernels_ch05.py", "reduce_sequential"): Copy(
        "notebooks/05_parallel_patterns.ipynb", "reduce_sequential"
    ),
    ("benchmarks/kernels_ch05.py", "reduce_first_add"): Copy(
        "solutions/05_parallel_patterns_lab.ipynb", "reduce_first_add"
    ),
    ("benchmarks/kernels_ch05.py", "reduce_shuffle_atomic"): Copy(
        "notebooks/05_parallel_patterns.ipynb", "reduce_shuffle_atomic"
    ),
    ("benchmarks/kernels_ch05.py", "reduce_grid_stride"): Copy(
        "notebooks/05_parallel_patterns.ipynb", "reduce_grid_stride"
    ),
    ("benchmarks/kernels_ch06.py", "matmul_naive"): Copy(
        "notebooks/06_matmul_and_tensor_cores.ipynb", "matmul_naive"
    ),
    # inside the factory tiled(TILE)
    ("benchmarks/kernels_ch06.py", "matmul_tiled"): Copy(
        "solutions/06_matmul_lab.ipynb", "matmul_tiled"
    ),
    # inside the factory register_tiled(BM, BK, TM); the lab's version is the 2 x 2 special case
    ("benchmarks/kernels_ch06.py", "matmul_register_tiled"): Copy(
        "notebooks/06_matmul_and_tensor_cores.ipynb", "matmul_register_tiled"
    ),
    ("benchmarks/ch12_triton.py", "softmax_kernel"): Copy(
        "notebooks/12_triton.ipynb",
        "softmax_row_kernel",
        why="the chapter's one-block-per-row softmax (the lab's solution loops over blocks of "
        "a row, for rows wider than a block)",
    ),
    ("benchmarks/ch12_triton.py", "layernorm_kernel"): Copy(
        "solutions/12_triton_lab.ipynb", "layernorm_kernel"
    ),
    ("benchmarks/ch12_triton.py", "matmul_kernel"): Copy(
        "notebooks/12_triton.ipynb", "matmul_kernel"
    ),
    ("benchmarks/ch12_triton.py", "attention_kernel"): Copy(
        None,
        why="the GPU version of the lab's attention_kernel: all heads in one launch "
        "(program_id(1)), exp2 with log2(e) folded into the scale, the inputs' dtype (bfloat16) "
        "in the second dot, no causal branch; the lab's is one head, float16, causal optional",
    ),
}


def _is_kernel(node: ast.FunctionDef) -> bool:
    return any(
        ast.unparse(d.func if isinstance(d, ast.Call) else d) in ("cuda.jit", "triton.jit", "jit")
        for d in node.decorator_list
    )


def _functions(tree: ast.AST) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


def _benchmark_kernels(path: str) -> dict[str, ast.FunctionDef]:
    tree = ast.parse((ROOT / path).read_text())
    return {f.name: f for f in _functions(tree) if _is_kernel(f)}


def _notebook_function(notebook: str, name: str) -> tuple[ast.FunctionDef, int]:
    """The one definition of ``name`` among the notebook's code cells, and its cell's index."""
    found = []
    cells = json.loads((ROOT / notebook).read_text())["cells"]
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        # IPython magics and shell lines are not Python
        lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        found += [(f, index) for f in _functions(tree) if f.name == name]
    assert len(found) == 1, (
        f"{notebook} defines {name} {len(found)} times; the table in "
        f"tests/test_benchmark_kernel_copies.py needs exactly one"
    )
    return found[0]


class _Rename(ast.NodeTransformer):
    def __init__(self, renamed: dict[str, str]):
        self.renamed = renamed

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.renamed:
            return ast.copy_location(ast.Name(self.renamed[node.id], node.ctx), node)
        return node


def _normalised(function: ast.FunctionDef, renamed: dict[str, str] | None = None) -> str:
    """The arguments and body as ``ast.dump`` (no decorators, docstring, comments, layout)."""
    body = function.body
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        body = body[1:]
    module = ast.Module(body=[function.args, *body], type_ignores=[])
    if renamed:
        module = _Rename(renamed).visit(module)
    return ast.dump(module, annotate_fields=False)


def _diff(lab: ast.FunctionDef, copy: ast.FunctionDef) -> str:
    import difflib

    lines = difflib.unified_diff(
        ast.unparse(lab).splitlines(), ast.unparse(copy).splitlines(), "lab", "copy", lineterm=""
    )
    return "\n".join(list(lines)[:40])


def _module_constants(tree: ast.Module) -> dict[str, str]:
    """Top-level ``NAME = expr`` and ``A, B = x, y`` assignments, as source text."""
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                out[target.id] = ast.unparse(node.value)
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                for name, value in zip(target.elts, node.value.elts, strict=False):
                    if isinstance(name, ast.Name):
                        out[name.id] = ast.unparse(value)
    return out


def _notebook_constants(notebook: str) -> dict[str, str]:
    """The module-level constants of the notebook's code cells (a later cell's value wins)."""
    out: dict[str, str] = {}
    for cell in json.loads((ROOT / notebook).read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        try:
            out.update(_module_constants(ast.parse("\n".join(lines))))
        except SyntaxError:
            continue
    return out


def test_every_benchmark_kernel_is_in_the_table():
    found = {(path, name) for path in BENCHMARK_FILES for name in _benchmark_kernels(path)}
    missing = sorted(found - TABLE.keys())
    stale = sorted(TABLE.keys() - found)
    assert not missing, (
        f"kernels without an entry in TABLE of tests/test_benchmark_kernel_copies.py: {missing}; "
        "add each with the notebook and function it copies (or notebook None and why)"
    )
    assert not stale, f"TABLE entries whose kernel is no longer in its benchmark file: {stale}"


def test_the_table_says_why_where_a_copy_is_not_exact():
    for key, copy in TABLE.items():
        if copy.notebook is None or copy.renamed:
            assert copy.why, f"{key}: say why it is not an exact copy"
        if copy.notebook is not None:
            assert copy.function, f"{key}: name the function in {copy.notebook}"


@pytest.mark.parametrize(
    "key", [k for k, c in TABLE.items() if c.notebook], ids=lambda k: f"{k[0]}::{k[1]}"
)
def test_benchmark_kernel_matches_its_lab(key):
    path, name = key
    copy = TABLE[key]
    kernels = _benchmark_kernels(path)
    assert name in kernels, f"{path} no longer defines the kernel {name}"
    lab, cell = _notebook_function(copy.notebook, copy.function)
    if _normalised(lab, copy.renamed) != _normalised(kernels[name]):
        renames = f" (after renaming {copy.renamed})" if copy.renamed else ""
        pytest.fail(
            f"{path}'s {name} differs from {copy.function} in {copy.notebook} (code cell "
            f"{cell}){renames}. The lab is the source of truth: copy the lab's kernel into "
            f"{path} again (or, if the lab's change was a mistake, undo it there).\n"
            + _diff(lab, kernels[name])
        )


@pytest.mark.parametrize(
    "key", [k for k, c in TABLE.items() if c.notebook], ids=lambda k: f"{k[0]}::{k[1]}"
)
def test_benchmark_constants_match_its_lab(key):
    """The module-level constants a copied kernel reads (TILE, BLOCK, ...) hold the lab's values
    (a factory's kernel reads its parameters instead, so it has none to check here)."""
    path, name = key
    copy = TABLE[key]
    tree = ast.parse((ROOT / path).read_text())
    if name not in {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}:
        pytest.skip("inside a factory: its sizes are arguments, chosen for the GPU")
    ours = _module_constants(tree)
    theirs = _notebook_constants(copy.notebook)
    source_name = {new: old for old, new in copy.renamed.items()}
    used = {n.id for n in ast.walk(_benchmark_kernels(path)[name]) if isinstance(n, ast.Name)}
    for constant in sorted(used & ours.keys()):
        if constant in source_name and copy.value_differs:
            continue
        lab_name = source_name.get(constant, constant)
        assert lab_name in theirs, (
            f"{copy.notebook} defines no {lab_name} (used by {path}'s {name})"
        )
        assert ours[constant] == theirs[lab_name], (
            f"{path} sets {constant} = {ours[constant]}, {copy.notebook} sets {lab_name} = "
            f"{theirs[lab_name]}: copy the lab's value into {path} again"
        )


def test_the_comparison_sees_a_change_of_logic():
    lab, _ = _notebook_function("notebooks/05_parallel_patterns.ipynb", "reduce_sequential")
    changed = ast.parse(ast.unparse(lab).replace("stride //= 2", "stride //= 4")).body[0]
    reformatted = ast.parse("# a comment\n" + ast.unparse(lab).replace("(", "( ")).body[0]
    assert _normalised(changed) != _normalised(lab)
    assert _normalised(reformatted) == _normalised(lab)
