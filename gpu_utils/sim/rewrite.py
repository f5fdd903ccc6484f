"""The AST rewrite behind the course's simulator (:mod:`gpu_utils.sim`).

A kernel's Python function (``kernel.py_func``) and the device functions it calls are parsed
from their source and compiled again, with three changes:

* every barrier (``cuda.syncthreads()``, its ``_count/_and/_or`` forms, ``cuda.syncwarp()``)
  and every warp shuffle, vote, match and ``activemask`` becomes a ``yield`` of
  ``(kind, site, value)``, so each CUDA thread of a block is a Python
  generator the engine resumes phase by phase; a call of a device function that reaches a barrier
  becomes ``yield from``; a function that reaches none stays a plain function;
* every index ``a[i]`` / ``a[i, j]`` checks its components: a Python ``int`` inside the bounds
  takes an inline fast path, anything else goes through :func:`check_index`, which reports an
  index outside the array; a negative one wraps once, as numba does on a GPU and in its
  simulator (``a[-1]`` is the last element; ``a[-n - 1]`` is reported);
* ``cuda.shared.array(...)`` gets the identity of its call site, so two arrays declared on one
  line stay two arrays.

Line numbers are those of the original source, so a traceback or an error names the learner's
line.
"""

from __future__ import annotations

import ast
import copy
import inspect
import sys
import textwrap
import types
from dataclasses import dataclass, field

import numpy as np

#: Barrier kinds, as the first element of what a thread yields (WARP: a shuffle, vote, match or
#: activemask of :mod:`gpu_utils.sim.warp`, a rendezvous of the lanes in its mask).
SYNC, SYNC_COUNT, SYNC_AND, SYNC_OR, SYNCWARP, WARP = range(6)
BARRIERS = {
    "syncthreads": SYNC,
    "syncthreads_count": SYNC_COUNT,
    "syncthreads_and": SYNC_AND,
    "syncthreads_or": SYNC_OR,
    "syncwarp": SYNCWARP,
}
#: The warp intrinsics of :mod:`gpu_utils.sim.warp` that are a rendezvous of the lanes in their mask:
#: each becomes a ``yield (WARP, site, (name, args))`` that the engine answers.
WARP_INTRINSICS = (
    "shfl_sync",
    "shfl_up_sync",
    "shfl_down_sync",
    "shfl_xor_sync",
    "ballot_sync",
    "all_sync",
    "any_sync",
    "eq_sync",
    "match_any_sync",
    "match_all_sync",
    "activemask",
)

#: Every barrier site of every compiled function: site id -> (file name, line, function name).
SITES: list[tuple[str, int, str]] = []
#: The source function's code object of each site (site id -> code), for observers
#: (:mod:`gpu_utils.sim.observe`), which name code objects as numba's simulator runs them.
SITE_CODES: dict[int, types.CodeType] = {}


class NotHandledYet(NotImplementedError):
    """A kernel uses something the course's simulator does not run yet."""


class IndexOutOfBounds(IndexError):
    """An index outside an array (past the end, or before the start even wrapped once). Besides
    its message it carries the facts as attributes, for the checkers (never parse the text):
    ``array`` (the indexed expression's source), ``index``, ``axis``, ``size`` (of that axis),
    ``shape``, and, once the engine adds them, ``thread`` and ``block`` (``(x, y, z)`` tuples),
    ``line`` (the learner's) and ``cause`` (the message without thread and line)."""

    def __init__(
        self,
        message: str = "",
        *,
        array: str = "",
        index: int | None = None,
        axis: int | None = None,
        size: int | None = None,
        shape: tuple | None = None,
        thread: tuple | None = None,
        block: tuple | None = None,
        line: int | None = None,
        cause: str | None = None,
    ) -> None:
        super().__init__(message)
        self.array, self.index, self.axis, self.size, self.shape = array, index, axis, size, shape
        self.thread, self.block, self.line = thread, block, line
        self.cause = message if cause is None else cause

    def located(self, message: str, thread, block, line) -> IndexOutOfBounds:
        """The same facts with the thread, block and line the engine knows."""
        return IndexOutOfBounds(
            message,
            array=self.array,
            index=self.index,
            axis=self.axis,
            size=self.size,
            shape=self.shape,
            thread=thread,
            block=block,
            line=line,
            cause=self.cause,
        )


def check_index(array, index, axis, name):
    """The slow path of an index: return ``index`` when it is inside ``array``, else raise.

    ``axis`` is the component's axis, or None when ``index`` is the whole index (an int, or a
    tuple held in a variable). Anything that is not an array, and index types other than
    integers, go through unchanged: numpy then raises its own error, as in numba's simulator.
    """
    if type(array) is not np.ndarray and not isinstance(array, np.ndarray):
        array = getattr(array, "_ary", None)  # an observed array (gpu_utils.sim.observe)
        if not isinstance(array, np.ndarray):
            return index
    if axis is None:
        if type(index) is tuple:
            for k, component in enumerate(index):
                check_index(array, component, k, name)
            return index
        axis = 0
    if isinstance(index, (int, np.integer)) and not isinstance(index, (bool, np.bool_)):
        shape = array.shape
        if axis >= len(shape):
            return index  # too many indices: numpy says so
        size = shape[axis]
        if -size <= index < size:
            # numba wraps a negative index once, compiled for a GPU as in its simulator (the
            # compiler always adds the wraparound: numba/numba#1533), so a[-1] is the last element
            return index
        negative = "; a negative index wraps once in Numba, this one reaches before the start"
        negative = negative if index < 0 else ""
        raise IndexOutOfBounds(
            f"index {int(index)} is out of bounds for axis {axis} with size {size} "
            f"(array `{name}` of shape {tuple(shape)}{negative})",
            array=name,
            index=int(index),
            axis=axis,
            size=size,
            shape=tuple(shape),
        )
    return index


@dataclass
class Analysis:
    """What one function's source says, before names are resolved."""

    tree: ast.FunctionDef
    filename: str
    barrier_direct: bool  # calls cuda.<barrier> or a warp rendezvous itself
    called_names: set[str] = field(default_factory=set)  # plain names it calls


_ANALYSES: dict[types.CodeType, Analysis] = {}


def _source_tree(function) -> tuple[ast.FunctionDef, str]:
    code = function.__code__
    try:
        lines, first = inspect.getsourcelines(function)
    except (OSError, TypeError) as error:
        raise NotHandledYet(
            f"the course's simulator needs the source of `{function.__name__}` "
            f"({code.co_filename}), which Python cannot find: define it in a file or a "
            "notebook cell"
        ) from error
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            node.decorator_list = []
            return node, code.co_filename
    raise NotHandledYet(f"cannot find the definition of `{function.__name__}` in its source")


def _is_cuda(node, cuda_names) -> bool:
    return isinstance(node, ast.Name) and node.id in cuda_names


def analyse(function, cuda_names: frozenset[str]) -> Analysis:
    """Parse ``function`` once (cached by code object) and note its barriers and calls."""
    key = function.__code__
    found = _ANALYSES.get(key)
    if found is not None:
        return found
    tree, filename = _source_tree(function)
    barrier = False
    called: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_cuda(node.value, cuda_names):
            if node.attr in BARRIERS or node.attr in WARP_INTRINSICS:
                barrier = True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
    found = _ANALYSES[key] = Analysis(tree, filename, barrier, called)
    return found


_COORDINATES = ("threadIdx", "blockIdx", "blockDim", "gridDim")


def _nonnegative_names(
    tree: ast.FunctionDef, cuda_names, constants: frozenset[str] = frozenset()
) -> frozenset[str]:
    """Local names that can only hold non-negative ints: every binding is a ``for`` over
    ``range`` with a non-negative start and a positive step, or a thread coordinate
    (``cuda.threadIdx.x``, ``cuda.grid(1)``, ``x, y = cuda.grid(2)``...), or a sum, product,
    ``//`` or ``%`` of such, or of ``constants`` (global or closure names that hold a
    non-negative int when the launch compiles the kernel, such as ``TILE``; the compiled code is
    cached per set of them). An index made of them needs no check for a negative value (numpy
    still reports one past the end)."""
    sources: dict[str, list] = {}
    params = {a.arg for a in (*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs)}
    unsafe = set(params)

    def bind(target, value):
        if isinstance(target, ast.Name):
            sources.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
            if values is None and _is_grid(value, cuda_names):
                values = [value] * len(target.elts)  # x, y = cuda.grid(2)
            for k, element in enumerate(target.elts):
                bind(element, values[k] if values and k < len(values) else None)
        elif isinstance(target, ast.Starred) and isinstance(target.value, ast.Name):
            unsafe.add(target.value.id)
        # a subscript or attribute target binds no name

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            bind(node.target, None)
        elif isinstance(node, (ast.For, ast.comprehension)):
            bind(node.target, ("range", node.iter))
        elif isinstance(
            node, (ast.With, ast.ExceptHandler, ast.Global, ast.Nonlocal, ast.Lambda)
        ) or (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not tree
        ):  # bindings too rare in a kernel to follow, and nested scopes: checked as usual
            for name in ast.walk(node):
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                    unsafe.add(name.id)
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                unsafe.update(node.names)
    # a constant is one only where the function never binds its name (then it is a local)
    safe: set[str] = {c for c in constants if c not in sources and c not in unsafe}
    changed = True
    while changed:  # a fixed point: names defined from names already known to be safe
        changed = False
        for name, values in sources.items():
            if name in safe or name in unsafe:
                continue
            if all(_nonnegative(v, safe, cuda_names) for v in values):
                safe.add(name)
                changed = True
    return frozenset(safe)


def _is_grid(node, cuda_names) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "grid"
        and _is_cuda(node.func.value, cuda_names)
    )


def _nonnegative(node, safe, cuda_names) -> bool:
    if isinstance(node, tuple):  # ("range", iterable) from a for loop
        call = node[1]
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "range"
            and not call.keywords
            and 1 <= len(call.args) <= 3
        ):
            return False
        start = call.args[0] if len(call.args) >= 2 else ast.Constant(0)
        step_ok = (
            len(call.args) < 3
            or (
                isinstance(call.args[2], ast.Constant)
                and type(call.args[2].value) is int
                and call.args[2].value > 0
            )
            or _nonnegative(call.args[2], safe, cuda_names)
        )
        return step_ok and _nonnegative(start, safe, cuda_names)
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return type(node.value) is int and node.value >= 0
    if isinstance(node, ast.Name):
        return node.id in safe
    if _is_grid(node, cuda_names) or (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "gridsize"
        and _is_cuda(node.func.value, cuda_names)
    ):
        return True
    if (  # cuda.threadIdx.x and the like
        isinstance(node, ast.Attribute)
        and node.attr in ("x", "y", "z")
        and isinstance(node.value, ast.Attribute)
        and node.value.attr in _COORDINATES
        and _is_cuda(node.value.value, cuda_names)
    ):
        return True
    if isinstance(node, ast.BinOp) and isinstance(
        node.op, (ast.Add, ast.Mult, ast.FloorDiv, ast.Mod)
    ):
        return _nonnegative(node.left, safe, cuda_names) and _nonnegative(
            node.right, safe, cuda_names
        )
    return False


class _Rewriter(ast.NodeTransformer):
    def __init__(self, cuda_names, yielding_calls, filename, name, is_kernel, generator):
        self.cuda_names = cuda_names
        self.yielding_calls = yielding_calls
        self.filename = filename
        self.name = name
        self.is_kernel = is_kernel
        self.generator = generator
        self.temp = 0
        self.depth = 0  # inside a lambda or comprehension: no walrus there
        self.labels: dict[tuple[int, int], str] = {}
        self.uses_grid1 = False
        self.safe: frozenset[str] = frozenset()

    # scopes where walrus temporaries cannot live
    def _nested(self, node):
        self.depth += 1
        try:
            return self.generic_visit(node)
        finally:
            self.depth -= 1

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = _nested
    visit_GeneratorExp = _nested

    def visit_FunctionDef(self, node):
        if self.depth == 0 and node.name == self.name and not getattr(self, "_top", False):
            self._top = True
            self.generic_visit(node)
            return node
        return self._nested(node)

    def visit_Return(self, node):
        self.generic_visit(node)
        if self.is_kernel and self.generator and self.depth == 0 and node.value is None:
            # a kernel returns nothing: its generator returns the line it left from
            node.value = ast.copy_location(ast.Constant(node.lineno), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and _is_cuda(func.value, self.cuda_names):
            kind = BARRIERS.get(func.attr)
            if kind is not None:
                if self.depth:
                    raise NotHandledYet(
                        f"line {node.lineno}: cuda.{func.attr}() inside a lambda or "
                        "comprehension is not handled by the course's simulator"
                    )
                SITES.append((self.filename, node.lineno, self.name))
                site = len(SITES) - 1
                value = node.args[0] if node.args else ast.Constant(None)
                if kind == SYNCWARP and not node.args:
                    value = ast.Constant(0xFFFFFFFF)
                payload = ast.Tuple([ast.Constant(kind), ast.Constant(site), value], ast.Load())
                return ast.copy_location(ast.Yield(payload), node)
            if func.attr in WARP_INTRINSICS:
                if (
                    self.depth
                    or node.keywords
                    or any(isinstance(a, ast.Starred) for a in node.args)
                ):
                    where = (
                        "inside a lambda or comprehension" if self.depth else "with * or key=value"
                    )
                    raise NotHandledYet(
                        f"line {node.lineno}: cuda.{func.attr}() {where} is not handled by the "
                        "course's simulator: call it with plain positional arguments in the "
                        "kernel's own statements"
                    )
                SITES.append((self.filename, node.lineno, self.name))
                args = ast.Tuple(list(node.args), ast.Load())
                value = ast.Tuple([ast.Constant(func.attr), args], ast.Load())
                payload = ast.Tuple(
                    [ast.Constant(WARP), ast.Constant(len(SITES) - 1), value], ast.Load()
                )
                return ast.copy_location(ast.Yield(payload), node)
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "grid"
            and _is_cuda(func.value, self.cuda_names)
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == 1
        ):
            self.uses_grid1 = True  # the engine sets cuda.grid1 before it runs each thread
            return ast.copy_location(ast.Attribute(func.value, "grid1", ast.Load()), node)
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "gridsize"
            and _is_cuda(func.value, self.cuda_names)
            and len(node.args) == 1
            and not node.keywords
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in (1, 2, 3)
        ):  # the same for every thread of a launch: computed once (Module.gridsize1...)
            name = f"gridsize{node.args[0].value}"
            return ast.copy_location(ast.Attribute(func.value, name, ast.Load()), node)
        if isinstance(func, ast.Name) and func.id in self.yielding_calls:
            if self.depth:
                raise NotHandledYet(
                    f"line {node.lineno}: `{func.id}` reaches a barrier and is called inside a "
                    "lambda or comprehension, which the course's simulator does not handle"
                )
            return ast.copy_location(ast.YieldFrom(node), node)
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "array"
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "shared"
            and _is_cuda(func.value.value, self.cuda_names)
        ):
            SITES.append((self.filename, node.lineno, self.name))
            func.attr = "array_at"
            node.args.insert(0, ast.Constant(len(SITES) - 1))
        return node

    def _tmp(self, node) -> tuple[ast.Name, ast.Name]:
        self.temp += 1
        name = f"_sim_t{self.temp}"
        return (
            ast.copy_location(ast.Name(name, ast.Store()), node),
            ast.copy_location(ast.Name(name, ast.Load()), node),
        )

    def _checked(self, component, array_load, axis, label, node):
        """``t if t.__class__ is int and t >= 0 else check_index(...)``; ``t`` is the component
        itself when it is a name, else a walrus temporary. An index past the end is left to
        numpy's IndexError, which the engine turns into the same report (see ``labels``)."""
        if _nonnegative(component, self.safe, self.cuda_names):
            return component  # a non-negative int: numpy reports one past the end
        if isinstance(component, ast.Name):
            first, load = component, ast.Name(component.id, ast.Load())
        elif isinstance(component, ast.Constant) and type(component.value) is int:
            if component.value >= 0:
                return component
            first = load = component
        else:
            store, load = self._tmp(node)
            first = ast.NamedExpr(store, component)
        test = ast.BoolOp(
            ast.And(),
            [
                ast.Compare(
                    ast.Attribute(first, "__class__", ast.Load()),
                    [ast.Is()],
                    [ast.Name("int", ast.Load())],
                ),
                ast.Compare(load, [ast.GtE()], [ast.Constant(0)]),
            ],
        )
        slow = ast.Call(
            ast.Name("_sim_check_index", ast.Load()),
            [array_load, load, ast.Constant(axis), ast.Constant(label)],
            [],
        )
        return ast.IfExp(test, load, slow)

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr == "cg" and _is_cuda(node.value, self.cuda_names):
            # a grid group (this_grid().sync()): refused here, before anything runs, so that
            # the launch goes to numba-cuda's simulator, which runs a one-block grid's sync
            raise NotHandledYet(
                f"line {node.lineno}: cuda.cg (cooperative groups, a grid-wide barrier) is not "
                "handled by the course's simulator"
            )
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        index = node.slice
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        if (
            self.depth
            or not parts
            or any(isinstance(p, (ast.Slice, ast.Starred)) for p in parts)
            or (isinstance(index, ast.Constant) and not isinstance(index.value, int))
        ):
            return node
        label = ast.unparse(node.value)
        self.labels[(node.lineno, node.col_offset)] = label
        if all(_nonnegative(p, self.safe, self.cuda_names) for p in parts):
            return node  # nothing to check (a.shape[0], tile[ty, tx]): no temporary either
        if isinstance(node.value, ast.Name):
            array_load = ast.Name(node.value.id, ast.Load())
        else:
            store, array_load = self._tmp(node)
            node.value = ast.NamedExpr(store, node.value)
        if isinstance(index, ast.Tuple):
            elts = [self._checked(p, array_load, k, label, node) for k, p in enumerate(parts)]
            node.slice = ast.Tuple(elts, ast.Load())
        else:
            node.slice = self._checked(index, array_load, None, label, node)
        return node


#: For each compiled code object: (line, column) of each checked index -> the array's source.
LABELS: dict[types.CodeType, dict[tuple[int, int], str]] = {}


def compile_function(
    function,
    analysis: Analysis,
    cuda_names,
    yielding_calls,
    *,
    is_kernel,
    generator,
    constants: frozenset[str] = frozenset(),
):
    """Compile the rewritten ``function``: its code object, and whether it uses ``grid(1)``."""
    tree = copy.deepcopy(analysis.tree)
    first_site = len(SITES)
    rewriter = _Rewriter(
        frozenset(cuda_names),
        frozenset(yielding_calls),
        analysis.filename,
        function.__code__.co_name,
        is_kernel,
        generator,
    )
    rewriter.safe = _nonnegative_names(tree, rewriter.cuda_names, constants)
    tree = rewriter.visit(tree)
    freevars = function.__code__.co_freevars
    if freevars:
        # a closure: compile inside an outer function so that the free variables stay free
        outer = ast.FunctionDef(
            name="_sim_outer",
            args=ast.arguments([], [ast.arg(v) for v in freevars], None, [], [], None, []),
            body=[
                tree,
                ast.Return(ast.Name(tree.name, ast.Load())),
            ],
            decorator_list=[],
            returns=None,
            **({"type_params": []} if sys.version_info >= (3, 12) else {}),
        )
        module = ast.Module([outer], [])
    else:
        module = ast.Module([tree], [])
    ast.fix_missing_locations(module)
    code = compile(module, analysis.filename, "exec")
    outer_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    if freevars:
        inner = next(c for c in outer_code.co_consts if isinstance(c, types.CodeType))
    else:
        inner = outer_code
    if generator and not inner.co_flags & inspect.CO_GENERATOR:
        raise AssertionError("a function with a barrier did not become a generator")
    LABELS[inner] = rewriter.labels
    for site in range(first_site, len(SITES)):
        SITE_CODES[site] = function.__code__
    return inner, rewriter.uses_grid1
