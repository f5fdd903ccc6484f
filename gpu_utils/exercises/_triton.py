"""Shared machinery for Triton exercises (chapter 12): the checker launches the learner's
``@triton.jit`` kernel itself on fresh random tensors, with NaN-poisoned outputs, on several
shapes (sizes that are not multiples of the block among them), and explains what went wrong.

On the simulator the kernel runs in Triton's interpreter (``TRITON_INTERPRET=1``), which executes
each program on the CPU with NumPy and dereferences raw addresses. Every load and store is checked
here first against the address ranges of the tensors the checker passed (:func:`guarded`): an
access outside them stops the kernel with the tensor's name, the offending element offsets and the
line of the learner's cell, instead of reading garbage or crashing the process. A kernel that is
correct in the interpreter is then compiled for a GPU (Triton's compiler runs without one), so
code that a GPU would not accept fails too.
"""

from __future__ import annotations

import ast
import contextlib
import copyreg
import inspect
import linecache
import os
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import runtime
from ..pickling import python_function
from . import _evidence as ev
from ._engine import (
    Mismatch,
    NotAttempted,
    changed_element,
    changed_input_failure,
    correct_on,
    documented_arguments,
    mismatch_of,
    run_cases,
    wrote_nothing_text,
)
from ._errors import parse_line, signature_problem
from ._registry import CheckResult, Exercise, failed, passed


def triton_module():
    """``triton``, imported in this process's mode (the interpreter on the simulator)."""
    if runtime.mode == "simulator":
        os.environ["TRITON_INTERPRET"] = "1"  # read by triton when a kernel is decorated
    import triton

    return triton


# --- sending a kernel to the checker's process ----------------------------------------------


#: Set in the environment of ``gu.triton_ir``'s compiler process, where every kernel, helpers
#: included, must become a compiled ``JITFunction`` whatever ``TRITON_INTERPRET`` says.
COMPILER_PROCESS = "GPU_COURSE_TRITON_COMPILER"


def _rejit(function, kwargs, filename: str = "", lines: Sequence[str] = ()):
    """Rebuild a ``@triton.jit`` kernel in this process (compiled, or interpreted), with the text
    of the cell it comes from: Triton reads a kernel's source (``inspect.getsourcelines``), and
    a notebook cell's text is only in the ``linecache`` of the process that ran it."""
    if filename and lines and not linecache.getlines(filename):
        linecache.cache[filename] = (sum(map(len, lines)), None, list(lines), filename)
    if os.environ.get(COMPILER_PROCESS):
        from triton.runtime.jit import JITFunction

        return JITFunction(function, **kwargs)
    return triton_module().jit(function, **kwargs)


def _reduce_jit(kernel):
    """A kernel (and a ``@triton.jit`` helper it calls) travels as its Python function and the
    text of its cell."""
    function = kernel.fn
    filename = function.__code__.co_filename
    lines = linecache.getlines(filename, getattr(function, "__globals__", None))
    return _rejit, (function, {}, filename, tuple(lines))


def register_reducer() -> None:
    """Let a kernel travel to the checker's process by its Python function, rebuilt there with
    ``triton.jit`` in that process's mode: a compiled kernel (a ``JITFunction``) holds locks,
    and an interpreted one cannot be rebuilt attribute by attribute in every Triton version.
    (Called when the chapter's exercises load, and again when a Triton answer is prepared for
    the checker, in case the notebook imported triton only after the exercises.)"""
    for module, name in (
        ("triton.runtime.jit", "JITFunction"),
        ("triton.runtime.interpreter", "InterpretedFunction"),
    ):
        kind = getattr(sys.modules.get(module), name, None)
        if kind is not None:
            copyreg.pickle(kind, _reduce_jit)


# --- what the learner passed ------------------------------------------------------------------


def jit_function(kernel: object) -> Callable | None:
    """The Python function of a Triton kernel, through ``@triton.autotune`` and
    ``@triton.heuristics`` (which wrap the jitted kernel), or None."""
    if not (type(kernel).__module__ or "").startswith("triton"):
        return None
    for _ in range(4):
        function = python_function(kernel)
        if function is not None:
            return function
        kernel = getattr(kernel, "fn", None)
        if kernel is None:
            return None
    return None


def kernel_function(answer: object) -> tuple[Callable | None, tuple[str, str] | None]:
    """(the Python function of a Triton kernel, None) or (None, (what, hint))."""
    module = type(answer).__module__ or ""
    if module.startswith("numba"):
        return None, (
            "This is a Numba CUDA kernel (`@cuda.jit`); this exercise wants a Triton kernel.",
            "write it with `@triton.jit` and `triton.language` (`tl.load`, `tl.store`, ...), "
            "one program per block of elements, as in the chapter.",
        )
    function = jit_function(answer)
    if function is not None:
        return function, None
    if inspect.isfunction(answer):
        return None, (
            "This is a plain Python function, not a Triton kernel.",
            "put `@triton.jit` on the line above `def`, run the cell, then check again.",
        )
    return None, (
        f"Expected a Triton kernel (a function decorated with `@triton.jit`), got "
        f"{type(answer).__name__}.",
        "pass the kernel itself: check(..., my_kernel), not my_kernel[grid](...).",
    )


# --- cases -------------------------------------------------------------------------------------


@dataclass
class TritonCase:
    """One launch: ``args`` in the documented order (tensors and numbers), then ``constexprs``;
    ``outputs`` name the tensors poisoned with NaN before the launch; ``expected`` their values."""

    label: str
    grid: tuple[int, ...]
    args: dict[str, object]
    outputs: tuple[str, ...]
    expected: dict[str, object]
    constexprs: dict[str, object] = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-5
    extra: dict = field(default_factory=dict)


def _copy(tensor):
    """A fresh copy with the same sizes, strides and offset (a strided view stays strided)."""
    import torch

    storage = tensor.untyped_storage().clone()
    copy = torch.empty(0, dtype=tensor.dtype, device=tensor.device)
    copy.set_(storage, tensor.storage_offset(), tensor.size(), tensor.stride())
    return copy


def _is_tensor(value) -> bool:
    return hasattr(value, "data_ptr") and hasattr(value, "untyped_storage")


#: The bits of the NaN that fills outputs before a launch: a NaN the kernel computes has other
#: bits (0x7FC00000), so an unwritten element is told apart from a NaN result.
POISON_BITS = 0x7FC0DEAD


def poison(tensor) -> None:
    """Fill a float32 tensor with the checker's own NaN (other dtypes: a plain NaN)."""
    import torch

    if tensor.dtype == torch.float32:
        tensor.view(torch.int32).fill_(POISON_BITS)
    else:
        tensor.fill_(float("nan"))


def unwritten(tensor) -> np.ndarray:
    """Where ``tensor`` still holds the checker's poison."""
    import torch

    if tensor.dtype == torch.float32:
        return tensor.detach().cpu().view(torch.int32).numpy() == POISON_BITS
    return np.isnan(tensor.detach().float().cpu().numpy())


def fresh_args(case: TritonCase) -> dict[str, object]:
    """The case's arguments, copied; outputs filled with NaN."""
    args = {}
    for name, value in case.args.items():
        if _is_tensor(value):
            value = _copy(value)
            if name in case.outputs:
                poison(value)
        args[name] = value
    return args


# --- the out-of-bounds guard -----------------------------------------------------------------


class OutOfBounds(Exception):
    """An access outside every tensor of the launch (raised inside the interpreter)."""

    def __init__(self, text: str, line: int | None, source: str, masked: bool, tensor: str):
        super().__init__(text)
        self.text, self.line, self.source, self.masked, self.tensor = (
            text,
            line,
            source,
            masked,
            tensor,
        )


@dataclass
class _Span:
    name: str
    base: int
    itemsize: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]

    def element_offsets(self, addresses: np.ndarray) -> np.ndarray:
        return (addresses.astype(np.int64) - self.base) // self.itemsize

    def contains(self, addresses: np.ndarray, itemsize: int) -> np.ndarray:
        offset = addresses.astype(np.int64) - self.base
        inside = (offset >= 0) & (offset % self.itemsize == 0) & (itemsize == self.itemsize)
        rest = offset // self.itemsize
        for size, stride in sorted(zip(self.sizes, self.strides, strict=True), key=lambda p: -p[1]):
            if stride == 0 or size == 1:
                continue
            index = rest // stride
            inside &= index < size
            rest = rest - index * stride
        return inside & (rest == 0)

    def describe(self) -> str:
        dtype = {1: "8-bit", 2: "16-bit", 4: "32-bit", 8: "64-bit"}[self.itemsize]
        shape = " x ".join(str(s) for s in self.sizes) or "1"
        numel = int(np.prod(self.sizes)) if self.sizes else 1
        text = f"a tensor of {shape} {dtype} elements"
        contiguous = list(self.strides) == _contiguous_strides(self.sizes)
        if not contiguous:
            text += f", strides {tuple(self.strides)}"
        elif len(self.sizes) > 1:
            text += f", {numel} in all"
        return text


def _contiguous_strides(sizes) -> list[int]:
    strides, step = [], 1
    for size in reversed(sizes):
        strides.insert(0, step)
        step *= size
    return strides


def _spans(args: dict[str, object], names: Sequence[str]) -> list[_Span]:
    spans = []
    for (_, value), name in zip(args.items(), names, strict=False):
        if _is_tensor(value):
            spans.append(
                _Span(
                    name,
                    int(value.data_ptr()),
                    int(value.element_size()),
                    tuple(int(s) for s in value.size()),
                    tuple(int(s) for s in value.stride()),
                )
            )
    return spans


@dataclass(frozen=True)
class _Access:
    """One ``tl.load`` / ``tl.store`` call of the kernel's source, judged as a whole call (it may
    span several lines): its lines in the cell, its text, and what its mask bounds."""

    kind: str  # "load" or "store"
    first: int
    last: int
    text: str  # the call on one line
    pointer: str  # the pointer argument's text
    masked: bool
    unbounded: tuple[str, ...]  # block indices the pointers move with that the mask leaves out


def _kernel_tree(function):
    """(the parsed source of ``function``, the line number of its first line, the source text
    parsed) or (None, 0, "") when it cannot be read."""
    try:
        lines, first = inspect.getsourcelines(function)
        source = textwrap.dedent("".join(lines))
        return ast.parse(source), first, source
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None, 0, ""


def _block_indices(tree) -> dict[str, set[str]]:
    """For each name of the kernel, the block indices its value derives from: a name assigned
    an expression with ``tl.arange`` is an index of its own (``offs_m = pid * B + tl.arange``);
    ``rows = offs_m[:, None]`` derives from ``offs_m``."""
    roots: dict[str, set[str]] = {}
    assignments = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for g in targets for t in ast.walk(g) if isinstance(t, ast.Name)}
            arange = any(
                isinstance(n, ast.Attribute) and n.attr == "arange" for n in ast.walk(node.value)
            )
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            assignments.append((names, used, arange))
    for _ in range(4):  # a few rounds reach the fixed point of a kernel's chains
        for names, used, arange in assignments:
            for name in names:
                found = roots.setdefault(name, set())
                if arange and len(names) == 1:
                    found.add(name)
                else:
                    found.update(*(roots.get(u, set()) for u in used))
    return roots


def _accesses(function) -> list[_Access]:
    """Every ``*.load(`` / ``*.store(`` call in the kernel's source (empty when the source
    cannot be read)."""
    tree, start, source = _kernel_tree(function)
    if tree is None:
        return []
    start = max(start, 1)
    roots = _block_indices(tree)

    def indices(node) -> set[str]:
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        return set().union(*(roots.get(n, set()) for n in names)) if names else set()

    found = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("load", "store")
        ):
            continue
        kind = node.func.attr
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        position = 1 if kind == "load" else 2  # tl.load(ptrs, mask) / tl.store(ptrs, v, mask)
        pointer = keywords.get("pointer", node.args[0] if node.args else None)
        mask = keywords.get("mask", node.args[position] if len(node.args) > position else None)
        if pointer is None:
            continue
        text = " ".join((ast.get_source_segment(source, node) or "").split())
        text = re.sub(r",?\s*\)", ")", re.sub(r"([(\[])\s+", r"\1", text))  # `f( a, )`: `f(a)`
        unbounded = sorted(indices(pointer) - indices(mask)) if mask is not None else []
        found.append(
            _Access(
                kind,
                node.lineno + start - 1,
                (node.end_lineno or node.lineno) + start - 1,
                text,
                ast.get_source_segment(source, pointer) or "",
                mask is not None,
                tuple(unbounded),
            )
        )
    return found


def _access_at(accesses: list[_Access], line: int | None, kind: str) -> _Access | None:
    """The innermost call of ``kind`` ("load"/"store") whose lines contain ``line``; several
    such calls (two loads on one line) are judged together: any of their pointers, masked only
    if all of them are."""
    if line is None:
        return None
    around = [a for a in accesses if a.first <= line <= a.last]
    mine = [a for a in around if a.kind == kind] or around
    if not mine:
        return None
    shortest = min(a.last - a.first for a in mine)
    mine = [a for a in mine if a.last - a.first == shortest]
    if len(mine) == 1:
        return mine[0]
    return _Access(
        kind,
        min(a.first for a in mine),
        max(a.last for a in mine),
        mine[0].text,
        " ".join(a.pointer for a in mine),
        all(a.masked for a in mine),
        tuple(sorted({n for a in mine for n in a.unbounded})),
    )


def _learner_line(filename: str) -> tuple[int | None, str]:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == filename:
            line = frame.f_lineno
            return line, linecache.getline(filename, line).strip()
        frame = frame.f_back
    return None, ""


def _ranges(values: np.ndarray) -> str:
    values = np.unique(values)
    if values.size == 1:
        return f"offset {values[0]}"
    shown = ", ".join(str(v) for v in values[:4])
    more = f", ... ({values.size} offsets, from {values[0]} to {values[-1]})"
    if values.size <= 4:
        return "offsets " + shown
    if values[-1] - values[0] + 1 == values.size:
        return f"offsets {values[0]} to {values[-1]} ({values.size} of them)"
    return "offsets " + shown + more


def _out_of_bounds(spans, filename, access, addresses, itemsize, program, call) -> OutOfBounds:
    """The report of an access outside ``spans``; ``call`` is the ``tl.load``/``tl.store``
    around the current line (None when the source could not be read)."""
    line, source = _learner_line(filename)
    if call is not None and call.first != call.last:  # a call over several lines: quote it all
        source = call.text if len(call.text) <= 90 else source
    words = set(re.findall(r"\w+", call.pointer if call is not None else source))
    named = [s for s in spans if s.name in words]
    if len(named) == 1:
        span = named[0]
    else:  # the tensor whose start lies nearest below the first address (or above, if none)
        first = int(addresses[0])
        below = [s for s in spans if s.base <= first]
        span = (
            max(below, key=lambda s: s.base) if below else min(spans, key=lambda s: s.base - first)
        )
    outside = addresses[~span.contains(addresses, itemsize)]
    outside = outside if outside.size else addresses
    offsets = span.element_offsets(outside)
    numel = int(np.prod(span.sizes)) if span.sizes else 1
    where = f"line {line}: `{source}`" if line else "one line of your kernel"
    text = (
        f"Program {program} {access} outside `{span.name}` ({span.describe()}) at {where}. "
        f"The pointers it used are at element {_ranges(offsets)} from `{span.name}`"
    )
    if list(span.strides) == _contiguous_strides(span.sizes):
        text += f"; valid offsets are 0 to {numel - 1}."
    elif len(span.sizes) == 2:
        row, column = divmod(int(offsets.min()), span.strides[0])
        text += (
            f"; the first is row {row}, column {column}, but `{span.name}` has "
            f"{span.sizes[0]} rows of {span.sizes[1]} columns."
        )
        rows, columns = np.divmod(offsets, span.strides[0])
        if span.strides[1] == 1 and ((columns >= span.sizes[1]) & (rows < span.sizes[0])).all():
            gap = (span.strides[0], span.sizes[1])
            # every element just past the end of the row the program's index names: its row
            # start is right, its columns ran past the row's length
            own_row = bool(program) and (rows == int(program[0])).all()
    else:
        text += ", which are not elements of it."
    text += " The checker stopped the kernel there: on a GPU this " + (
        "reads garbage or crashes."
        if access == "read"
        else "writes over memory outside the tensor (or crashes)."
    )
    if call is not None:
        masked = call.masked
    else:
        masked = bool(re.search(r"\bmask\s*=", source)) or _positional_mask(source)
    error = OutOfBounds(text, line, source, masked, span.name)
    error.offsets = tuple(int(o) for o in np.unique(offsets)[:4096])
    error.program = tuple(int(i) for i in program)
    if len(span.sizes) == 2 and span.strides[0] > 0 and offsets.size:
        # every element in a row past the last one, at a column inside the rows: the row index
        # ran past the tensor's rows (a row mask against another size)
        past, within = np.divmod(offsets, span.strides[0])
        # whole rows only: on a contiguous tensor, columns past the end of its last row land
        # on the same flat offsets as "rows past the end" (a matmul's K tail)
        whole = np.unique(offsets).size == (past.max() - past.min() + 1) * span.sizes[1]
        if whole and (past >= span.sizes[0]).all() and (within < span.sizes[1]).all():
            error.rows_past = (int(past.min()), int(past.max()), int(span.sizes[0]))
    if len(span.sizes) == 2 and span.strides[0] > 0 and offsets.size and program and program[0]:
        # one row past the end, the program's index times a constant: the row is computed as
        # a 1-D kernel's block start, program_id(0) * BLOCK_SIZE
        hit = np.unique(offsets // span.strides[0])
        p = int(program[0])
        k = int(hit[0]) // p if hit.size == 1 else 0
        # k a power of two, as a block size is (a matmul's K tail past a contiguous tensor's
        # end also lands in one row past the last, at another multiple)
        if k > 1 and k & (k - 1) == 0 and hit[0] >= span.sizes[0] and hit[0] % p == 0:
            error.row_times = (p, int(hit[0]), k)
    error.gap = locals().get("gap")
    error.own_row = bool(locals().get("own_row"))
    error.per_program = _per_program(span, offsets, program)
    error.access = access
    error.unbounded = call.unbounded if call is not None else ()
    return error


def _per_row(span: _Span, spans, offsets: np.ndarray) -> tuple[int, str, int] | None:
    """(n, the 2-D tensor with n rows, the lanes' last offset) when a block of lanes ran past
    the end of a 1-D tensor of n elements that has as many elements as another argument has
    rows: a value per row read with the columns' offsets, as if it held one per column."""
    if len(span.sizes) != 1 or offsets.size < 2:
        return None
    n = int(span.sizes[0])
    if int(offsets.min()) != n:
        return None
    rows = [s for s in spans if len(s.sizes) == 2 and s.sizes[0] == n and s.sizes[1] > n]
    if not rows:
        return None
    return n, rows[0].name, int(offsets.max())


def _per_program(span: _Span, offsets: np.ndarray, program) -> tuple[int, ...] | None:
    """(program index p, first, last offset) when a 1-D tensor of n elements was read by
    program p >= 1 (the others 0) at offsets inside [p * n, (p + 1) * n): the tensor offset
    by the program's row as if it held one row per program, not one vector shared by all."""
    if len(span.sizes) != 1 or not offsets.size:
        return None
    ids = [int(i) for i in program]
    if not ids or ids[0] < 1 or any(ids[1:]):
        return None
    n, first, last = span.sizes[0], int(offsets.min()), int(offsets.max())
    if n > 1 and ids[0] * n <= first and last < (ids[0] + 1) * n:
        return ids[0], first, last, n
    return None


def _positional_mask(source: str) -> bool:
    """``tl.load(ptrs, mask)`` / ``tl.store(ptrs, value, mask)``: a mask passed by position."""
    call = re.search(r"tl\.(load|store)\((.*)\)", source)
    if not call:
        return False
    depth, parts = 0, [""]
    for char in call.group(2):
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append("")
        else:
            parts[-1] += char
    arguments = [p for p in parts if p.strip() and "=" not in p.split("(")[0]]
    return len(arguments) >= (2 if call.group(1) == "load" else 3)


def _provenance(function, pointers: set[str]) -> dict[str, set[str]]:
    """For each name of the kernel's source, the pointer arguments its value derives from
    (``a_ptrs = a_ptr + ...`` gives {"a_ptrs": {"a_ptr"}})."""
    derived = {name: {name} for name in pointers}
    tree, _, _ = _kernel_tree(function)
    if tree is None:
        return derived
    assignments = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {
                t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)
            }
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            assignments.append((names, used))
    for _ in range(4):  # a few rounds reach the fixed point of a kernel's chains
        for names, used in assignments:
            sources = set().union(*(derived.get(u, set()) for u in used)) if used else set()
            for name in names:
                derived.setdefault(name, set()).update(sources)
    return derived


def _stride_owner(stride: str, tensors: Sequence[str]) -> str | None:
    """The tensor a stride argument's name points to: ``x_row_stride`` -> ``x_ptr``,
    ``stride_am`` -> ``a_ptr``, ``stride_q`` -> ``q_ptr`` (the longest prefix that fits)."""
    prefixes = {t[: -len("_ptr")] if t.endswith("_ptr") else t: t for t in tensors}
    if stride.startswith("stride_"):
        tail = stride[len("stride_") :]
        fits = [p for p in prefixes if p and tail.startswith(p)]
    else:
        head = stride.split("_")[0]
        fits = [p for p in prefixes if p == head]
    return prefixes[max(fits, key=len)] if fits else None


def _foreign_stride(tensor: str, call, strides: dict[str, set[str]], tensors) -> tuple | None:
    """(stride, its tensor) when the pointer of ``call`` into ``tensor`` is built with the
    stride argument of another tensor (``out_ptr + row * x_row_stride``): evidence from the
    source, read through the kernel's assignments."""
    if call is None:
        return None
    words = set(re.findall(r"[A-Za-z_]\w*", call.pointer))
    used = set().union(*(strides.get(w, set()) for w in words)) if words else set()
    for stride in sorted(used):
        owner = _stride_owner(stride, tensors)
        if owner is not None and owner != tensor and _stride_owner(stride, [tensor]) is None:
            mine = sorted(
                s for s in strides if "stride" in s and s not in used and _stride_owner(s, [tensor])
            )
            return stride, owner, mine[0] if mine else ""
    return None


def foreign_strides(function, names: Sequence[str]) -> list[tuple[int, str, str, str, str]]:
    """Every load or store whose pointer into one tensor is built with another tensor's stride
    argument, read from the source through the kernel's assignments: (line, tensor, stride,
    that stride's tensor, the tensor's own stride or ""). Empty when the source is unreadable."""
    tensors = [n for n in names if n.endswith("_ptr")]
    pointers = _provenance(function, set(tensors))
    strides = _provenance(function, {n for n in names if "stride" in n})
    found = []
    for call in _accesses(function):
        words = set(re.findall(r"[A-Za-z_]\w*", call.pointer))
        origins = set().union(*(pointers.get(w, set()) for w in words)) if words else set()
        if len(origins) != 1:
            continue
        (tensor,) = origins
        foreign = _foreign_stride(tensor, call, strides, tensors)
        if foreign:
            found.append((call.first, tensor, *foreign))
    return found


def _line_spans(spans, derived, filename, call) -> list:
    """The tensors the access on the learner's current line may touch: the one pointer argument
    its names (those of the call's pointer, when the call is known) derive from, when there is
    exactly one, else all of them."""
    _, source = _learner_line(filename)
    source = call.pointer if call is not None else source
    words = set(re.findall(r"[A-Za-z_]\w*", source))
    origins = set().union(*(derived.get(w, set()) for w in words)) if words else set()
    mine = [s for s in spans if s.name in origins]
    return mine if len(mine) == 1 else spans


@contextlib.contextmanager
def guarded(args: dict[str, object], names: Sequence[str], function):
    """Check every load and store of the interpreter against the tensors in ``args`` (against
    the one tensor the line's pointer comes from, when the source shows it)."""
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    spans = _spans(args, names)
    filename = function.__code__.co_filename
    derived = _provenance(function, {s.name for s in spans})
    strides = _provenance(function, {n for n in names if "stride" in n})
    accesses = _accesses(function)

    def check(ptrs, mask, access: str) -> None:
        addresses = np.asarray(ptrs.data).astype(np.uint64)
        active = np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)
        addresses = addresses[active]
        if addresses.size == 0:
            return
        itemsize = ptrs.get_element_ty().primitive_bitwidth // 8
        inside = np.zeros(addresses.shape, dtype=bool)
        kind = "load" if access == "read" else "store"
        call = _access_at(accesses, _learner_line(filename)[0], kind)
        allowed = _line_spans(spans, derived, filename, call)
        for span in allowed:
            inside |= span.contains(addresses, itemsize)
        if not inside.all():
            program = tuple(int(i) for i in builder.grid_idx)
            error = _out_of_bounds(allowed, filename, access, addresses, itemsize, program, call)
            error.foreign = _foreign_stride(error.tensor, call, strides, [s.name for s in spans])
            mine = [s for s in allowed if s.name == error.tensor]
            offsets = np.asarray(error.offsets, dtype=np.int64)
            error.per_row = _per_row(mine[0], spans, offsets) if mine else None
            raise error

    load, store = builder.create_masked_load, builder.create_masked_store
    rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas

    def masked_load(ptrs, mask, *rest):
        check(ptrs, mask, "read")
        return load(ptrs, mask, *rest)

    def masked_store(ptrs, value, mask, *rest):
        check(ptrs, mask, "wrote")
        return store(ptrs, value, mask, *rest)

    def atomic_rmw(op, ptr, val, mask, *rest):
        check(ptr, mask, "updated (atomically)")
        return rmw(op, ptr, val, mask, *rest)

    def atomic_cas(ptr, *rest):  # unmasked in Triton: every lane takes part
        from triton import language

        everywhere = type(ptr)(np.ones(np.shape(ptr.data), dtype=bool), language.int1)
        check(ptr, everywhere, "updated (atomically)")
        return cas(ptr, *rest)

    # Triton 3.6's interpreter makes a one-element block an index with int(array), which NumPy
    # 2.4 refuses (`range(0, n_cols, BLOCK)` fails); later versions take the element itself.
    patch_lang = interpreter._patch_lang

    def patch_lang_with_index(fn):
        scope = patch_lang(fn)
        tensor = getattr(interpreter.tl, "tensor", None)
        if tensor is not None and scope is not None:
            tensor.__index__ = lambda self: int(np.asarray(self.handle.data).reshape(-1)[0])
        return scope

    interpreter._patch_lang = patch_lang_with_index
    patched = {
        "create_masked_load": masked_load,
        "create_masked_store": masked_store,
        "create_atomic_rmw": atomic_rmw,
        "create_atomic_cas": atomic_cas,
    }
    for name, function in patched.items():
        setattr(builder, name, function)
    try:
        yield
    finally:
        interpreter._patch_lang = patch_lang
        for name in patched:
            builder.__dict__.pop(name, None)


# --- explaining a failed launch ----------------------------------------------------------------


@dataclass(frozen=True)
class LaunchError:
    """What went wrong in a launch, in the learner's terms. For an access outside a tensor,
    ``offsets`` are the element offsets (from the tensor's start) that fell outside it, and
    ``program`` the program that made the access: evidence a chapter's hint may read."""

    kind: str  # "out_of_bounds", "power_of_two", "name", "other"
    text: str
    hint: str
    line: int | None = None
    source: str = ""
    tensor: str = ""
    masked: bool = False
    offsets: tuple[int, ...] = ()
    program: tuple[int, ...] = ()
    from_source: bool = False  # the hint was read from the access's own source line


def _cause(error: BaseException) -> BaseException:
    """The learner's own exception inside the interpreter's wrapper (InterpreterError)."""
    seen = 0
    while type(error).__name__ == "InterpreterError" and error.__cause__ is not None and seen < 5:
        error, seen = error.__cause__, seen + 1
    return error


def _learner_locals(error: BaseException, filename: str) -> dict:
    """The local variables of the learner's innermost frame in the traceback ({} if none)."""
    found, traceback = {}, error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == filename:
            found = traceback.tb_frame.f_locals
        traceback = traceback.tb_next
    return dict(found)


def _learner_frame(error: BaseException, filename: str) -> tuple[int | None, str]:
    line, traceback = None, error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == filename:
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    return line, (linecache.getline(filename, line).strip() if line else "")


_NOT_DEFINED = re.compile(r"name '(\w+)' is not defined")
_NO_ATTRIBUTE = re.compile(r"has no attribute '(\w+)'")
_INTERNAL = re.compile(r"(/[^\s'\"]*site-packages/[^\s'\"]*|<[^>]*object at 0x[0-9a-f]+>)")


_SAME_DTYPE = re.compile(r"must be same dtype\. Got (\w+) and (\w+)")
_INCOMPATIBLE = re.compile(r"incompatible dimensions at index (\d+): (\d+) and (\d+)")
_DTYPE_WORDS = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}


def _call_arguments(source: str, call: str) -> list[str]:
    """The top-level argument texts of the first ``call(`` on a source line ([] if none)."""
    start = source.find(call + "(")
    if start < 0:
        return []
    depth, parts, current = 0, [], ""
    for char in source[start + len(call) + 1 :]:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                break
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return [part for part in parts if "=" not in part.split("(")[0]]


def _blocks_on_line(source: str, frame_locals: dict) -> list[tuple[str, tuple, str]]:
    """(name, shape, dtype) of each block variable the line names, from the learner's frame."""
    seen, found = set(), []
    for name in re.findall(r"(?<![\w.])([A-Za-z_]\w*)", source):
        value = frame_locals.get(name)
        shape = getattr(value, "shape", None)
        if name in seen or shape is None or not hasattr(value, "dtype"):
            continue
        seen.add(name)
        try:
            shape = tuple(int(getattr(d, "value", d)) for d in shape)
        except (TypeError, ValueError):
            continue
        found.append((name, shape, str(getattr(value, "dtype", ""))))
    return found


def _constexpr_names(value: int, frame_locals: dict) -> list[str]:
    return [
        name
        for name, v in frame_locals.items()
        if name.isupper()
        and type(getattr(v, "value", v)) is int
        and getattr(v, "value", v) == value
    ]


def _is_index_run(value) -> bool:
    """Whether an interpreter block holds consecutive integers (``start + tl.arange(0, B)``): an
    index vector, whose placement (``cols[None, :]``, columns along axis 1) says which axis is
    which."""
    data = getattr(getattr(value, "handle", None), "data", None)
    if data is None:
        return False
    data = np.asarray(data).reshape(-1)
    if data.size < 2 or data.dtype.kind not in "iu":
        return False
    return bool((np.diff(data.astype(np.int64)) == 1).all())


def _transposed(source: str, blocks, frame_locals: dict) -> str | None:
    """The hint when the line lays a 1-D block of L entries along one axis on purpose
    (``cols[None, :]``: along the columns) and a 2-D block of the line has L entries along the
    other axis only: that block's axes are the other way round (a tile computed transposed)."""
    shapes = {name: shape for name, shape, _ in blocks}
    tree = parse_line(source)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
            continue
        vector = shapes.get(node.value.id)
        index = node.slice
        if not (vector and len(vector) == 1 and isinstance(index, ast.Tuple)):
            continue
        if not _is_index_run(frame_locals.get(node.value.id)):
            continue  # a vector of data (targets, a row's maximum): it may be the one laid wrong
        parts = [isinstance(e, ast.Constant) and e.value is None for e in index.elts]
        if parts not in ([True, False], [False, True]):
            continue
        along = 1 if parts[0] else 0  # [None, :] lays it along axis 1 (the columns)
        length = vector[0]
        for name, shape in shapes.items():
            if len(shape) == 2 and shape[1 - along] == length and shape[along] != length:
                sizes = ", ".join((_constexpr_names(d, frame_locals) or [str(d)])[0] for d in shape)
                return (
                    f"`{name}` is ({shape[0]}, {shape[1]}), i.e. ({sizes}), with its "
                    f"{length} entries along axis {1 - along}, while "
                    f"`{ast.unparse(node)}` lays them along axis {along}: `{name}` has its "
                    "axes the other way round. If it comes from a `tl.dot`, the product of an "
                    "(M, K) block and a (K, N) block is (M, N): put the operand whose rows you "
                    "want first (swapping the operands, and their transposes, transposes the "
                    "result)."
                )
    return None


def _dot_mismatch(source: str, blocks, frame_locals: dict) -> str | None:
    """The hint when a 2-D block on the line has another shape than a ``tl.dot`` of the same
    line that it is combined with (an accumulator made in the scores' shape, (BLOCK_M, BLOCK_N),
    meeting ``p @ v``, (BLOCK_M, HEAD_DIM)); None otherwise."""
    shapes = {name: shape for name, shape, _ in blocks}
    tree = parse_line(source)
    if tree is None:
        return None

    def shape_of(node):
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value  # p.to(tl.float16) has p's shape
        return shapes.get(node.id) if isinstance(node, ast.Name) else None

    def first_name(d: int) -> str:
        names = _constexpr_names(d, frame_locals)
        return names[0] if names else str(d)

    def words(shape) -> str:
        names = [" = ".join(_constexpr_names(d, frame_locals)) or str(d) for d in shape]
        return f"({', '.join(map(str, shape))}), i.e. ({', '.join(names)})"

    for node in ast.walk(tree):
        if _tl_call(node) != "dot" or len(node.args) < 2:
            continue
        a, b = shape_of(node.args[0]), shape_of(node.args[1])
        if not (a and b and len(a) == 2 and len(b) == 2):
            continue
        product = (a[0], b[1])
        text = ast.unparse(node)
        for name, shape in shapes.items():
            if len(shape) == 2 and shape != product and shape[0] == product[0]:
                return (
                    f"`{name}` is {words(shape)}, but `{text}` is {words(product)}: blocks "
                    "added together must have one shape, and a block keeps the shape it was "
                    f"made with. Make `{name}` in the dot's shape where it is created (e.g. "
                    f"`tl.zeros(({', '.join(first_name(d) for d in product)}), "
                    "dtype=tl.float32)`)."
                )
    return None


def operand_problem(message: str, source: str, frame_locals: dict | None = None) -> str | None:
    """A hint from the text of Triton's operand errors (both the interpreter's and the
    compiler's): two ``tl.dot`` operands of different dtypes, or two blocks whose shapes do not
    broadcast. It names the operands on the line and what they are, or None for other errors."""
    frame_locals = frame_locals or {}
    dtypes = _SAME_DTYPE.search(message)
    if dtypes:
        first, second = (_DTYPE_WORDS.get(d, d) for d in dtypes.groups())
        operands = _call_arguments(source, "tl.dot")[:2]
        if len(operands) == 2:
            said = f"`{operands[0]}` is {first} and `{operands[1]}` is {second}"
        else:
            said = f"one operand is {first}, the other {second}"
        wide = (
            f"`{operands[[first, second].index('float32')]}.to(tl.float16)`"
            if len(operands) == 2 and "float32" in (first, second)
            else "`p.to(tl.float16)`"
        )
        return (
            f"`tl.dot` needs both operands in one dtype, and here {said}. The inputs are float16; "
            "a block becomes float32 when it is combined with a float32 value (`tl.exp`, a "
            "float32 accumulator or scale, a run-time float argument). Cast it back to float16 "
            f"before the dot, e.g. {wide}, or apply the float32 factor to the "
            "dot's result instead of an operand (the dot still accumulates in float32)."
        )
    shapes = _INCOMPATIBLE.search(message)
    if shapes:
        axis, left, right = (int(g) for g in shapes.groups())
        blocks = _blocks_on_line(source, frame_locals)
        named = "; ".join(
            f"`{n}` has shape ({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"
            for n, shape, _ in blocks
        )

        def size(v: int) -> str:
            names = _constexpr_names(v, frame_locals)
            return f"{v} ({' = '.join(names)})" if names else str(v)

        dotted = _dot_mismatch(source, blocks, frame_locals) or _transposed(
            source, blocks, frame_locals
        )
        if dotted:
            return dotted
        text = (
            f"two blocks on this line do not fit together: along axis {axis} one has "
            f"{size(left)} entries and the other {size(right)}"
            + (f" ({named})" if named else "")
            + ". Triton lines shapes up from the last axis, so a 1-D block of one value per "
            "row, combined with a 2-D (rows, columns) block, is taken as a row across the "
            "columns. Make it a column with `[:, None]` (e.g. `x - m[:, None]`), and a "
            "per-column vector a row with `[None, :]`."
        )
        return text
    return None


def explain(error: BaseException, filename: str) -> LaunchError:
    """Explain an exception raised by a launch of the learner's kernel."""
    cause = _cause(error)
    if (
        isinstance(cause, OutOfBounds)
        and getattr(cause, "gap", None)
        and not getattr(cause, "foreign", None)
    ):
        stride, length = cause.gap
        if getattr(cause, "own_row", False):
            hint = (
                f"each of those elements lies just past the end of the program's own row "
                f"(row {cause.program[0]}): the row starts in the right place, but its "
                f"columns ran past the row's length, {length}, into the gap before the next "
                f"row (`{cause.tensor}` is a strided view whose rows are {stride} elements "
                "apart). The mask must stop the columns at the row's length, `cols < n_cols`, "
                "not at its stride."
            )
        else:
            hint = (
                f"those elements lie between the rows of `{cause.tensor}`, a strided view whose "
                f"rows are {stride} elements apart but {length} long: a row starts at "
                f"`{cause.tensor} + row * <its row stride argument>` (not `row * n_cols`)."
            )
        return LaunchError(
            "out_of_bounds",
            cause.text,
            hint,
            cause.line,
            cause.source,
            cause.tensor,
            cause.masked,
            getattr(cause, "offsets", ()),
            getattr(cause, "program", ()),
        )
    if isinstance(cause, OutOfBounds):
        unbounded = getattr(cause, "unbounded", ())
        from_source = access_source_hint(filename, cause.line)
        store = getattr(cause, "access", "read") != "read"
        foreign = getattr(cause, "foreign", None)
        if from_source:
            hint = from_source
        elif foreign:
            stride, owner, mine = foreign
            hint = (
                f"the pointers into `{cause.tensor}` are built with `{stride}`, the stride of "
                f"`{owner}`: each tensor has its own layout"
                + (f"; use `{mine}` for `{cause.tensor}`." if mine else ".")
            )
        elif (
            getattr(cause, "row_times", None)
            and cause.row_times[2] in (4, 8)
            and any(
                re.search(pattern, (cause.source or "") + _row_source(filename))
                for pattern in (rf"\*\s*{cause.row_times[2]}\b", rf"\b{cause.row_times[2]}\s*\*")
            )
        ):
            p, row, k = cause.row_times
            hint = (
                f"program {p} reached row {row} = {p} x {k} of `{cause.tensor}`: its row offset "
                f"is multiplied by {k}, the size of an element in bytes. Triton's pointer "
                "arithmetic and the strides you are given count elements, not bytes: "
                "`x_ptr + row * x_row_stride` is already row `row`."
            )
        elif getattr(cause, "row_times", None):
            p, row, k = cause.row_times
            hint = (
                f"program {p} reached row {row} = {p} x {k} of `{cause.tensor}`, which has "
                "fewer rows: with one program per row, the row is `tl.program_id(0)` itself; "
                f"multiplied by {k} (a block's size?) it is where a 1-D kernel's block starts, "
                "not a row."
            )
        elif getattr(cause, "per_program", None) and not store:
            p, first, last, n = cause.per_program
            hint = (
                f"program {p} read `{cause.tensor}` ({n} elements) at offsets {first} to {last}, "
                f"inside [{p} * {n}, {p + 1} * {n}): its pointer moves by {n} elements per "
                f"program, as if `{cause.tensor}` held one row per program. It is one vector "
                f"shared by every row: index it by the column only, `{cause.tensor} + cols`, "
                "without the row's offset (program 0 reads the right elements by chance)."
            )
        elif getattr(cause, "per_row", None):
            n, rows, last = cause.per_row
            hint = (
                f"`{cause.tensor}` holds {n} values, as many as `{rows}` has rows: one per row. "
                f"This access runs a block of lanes over it up to offset {last}, one lane per "
                "column, as if it held a value per column. Read a per-row value once per "
                f"program, at the program's row: `tl.load({cause.tensor} + row)`."
            )
        elif getattr(cause, "rows_past", None) and not store and cause.masked:
            first, last, n = cause.rows_past
            hint = (
                f"those are rows {first} to {last} of `{cause.tensor}`, which has {n} rows: the "
                "row indices ran past its last row and the mask let them through. The mask must "
                f"compare the rows with the number of rows ({n} here, e.g. `rows < n_rows`), "
                "not with another size."
            )
        elif cause.masked and unbounded:
            names = " and ".join(f"`{n}`" for n in unbounded)
            # syntactic evidence only (the index's values are not known here): a blind
            # answer whose block start was added twice was told to mask an index that stays
            # inside its dimension, so the hint keeps both readings
            hint = (
                f"your mask lets these lanes through: the pointers move with {names}, which the "
                f"mask does not bound. If {names} can run past the size of its dimension, mask "
                "every dimension of the block: combine one comparison per dimension with `&` "
                "(e.g. `(rows[:, None] < n_rows) & (cols[None, :] < n_cols)`). If not, the "
                "offsets themselves are off: check the pointer arithmetic (each index times "
                "its own stride, a block's start counted once)."
            )
        elif cause.masked:
            hint = (
                f"your mask lets these lanes through: it must be False for every pointer outside "
                f"`{cause.tensor}` (compare with `<` against the size, and combine the masks of "
                "each dimension with `&`); also check the pointer arithmetic (row index times "
                "the row stride, plus the column)."
            )
        elif store:
            hint = (
                "this store has no mask: pass `mask=` (e.g. `mask=offsets < n_elements`) to "
                "`tl.store`, so that the lanes past the end write nothing; without it they "
                "write outside the tensor."
            )
        else:
            hint = (
                "this access has no mask: pass `mask=` (e.g. `mask=offsets < n_elements`) to "
                "`tl.load` and `tl.store`, so that the lanes past the end neither read nor write "
                "(and `other=` to say what a masked load gives)."
            )
        return LaunchError(
            "out_of_bounds",
            cause.text,
            hint,
            cause.line,
            cause.source,
            cause.tensor,
            cause.masked,
            getattr(cause, "offsets", ()),
            getattr(cause, "program", ()),
            from_source=bool(from_source),
        )
    if isinstance(cause, NotImplementedError):
        raise NotAttempted from error
    line, source = _learner_frame(cause, filename)
    where = f"line {line}: `{source}`" if line else "one line of your kernel"
    message = _INTERNAL.sub("...", str(cause)).strip()
    exc_type = type(cause).__name__
    common = dict(line=line, source=source)
    if "must be a power of 2" in message:
        return LaunchError(
            "power_of_two",
            f"Triton refused a block shape at {where} ({message}).",
            "every block dimension (`tl.arange(0, N)`, `tl.zeros((M, N), ...)`) must be a power "
            "of two: use the `BLOCK...` constexpr the checker passes (a power of two at least "
            "as large as the data) and mask the lanes past the end.",
            **common,
        )
    if "must be of type tl.constexpr" in message:
        return LaunchError(
            "power_of_two",
            f"Triton needs a compile-time constant at {where} ({message}).",
            "block shapes (`tl.arange(0, N)`, `tl.zeros((M, N), ...)`) are fixed when the kernel "
            "is compiled: use a `tl.constexpr` parameter such as `BLOCK_SIZE`, not a run-time "
            "value such as `n_cols`, and mask the lanes past the end. Like every block "
            "dimension, it must be a power of two.",
            **common,
        )
    undefined = _NOT_DEFINED.search(message)
    attribute = _NO_ATTRIBUTE.search(message)
    if isinstance(cause, NameError | AttributeError) and (undefined or attribute):
        name = (undefined or attribute).group(1)
        return LaunchError(
            "name",
            f"The name `{name}` does not exist ({exc_type}) at {where}.",
            f"a typo? Check the spelling of `{name}` on that line (Triton's functions are "
            "`tl.load`, `tl.store`, `tl.arange`, `tl.program_id`, `tl.dot`, `tl.max`, "
            "`tl.sum`, `tl.exp`, `tl.where`, ...).",
            **common,
        )
    text = f"Your kernel raised {exc_type} at {where}" + (f": {message}" if message else ".")
    frame_locals = _learner_locals(cause, filename)
    operands = _broadcast_load(filename, source, frame_locals) or operand_problem(
        message, source, frame_locals
    )
    return LaunchError(
        "other",
        text,
        operands
        or _floor_division(source, message)
        or _host_call(source)
        or _block_through_scalar(message)
        or f"fix the cause of this {exc_type}" + (f" on line {line}" if line else "") + ".",
        **common,
    )


def _row_source(filename: str) -> str:
    """The lines of the learner's cell that compute a row's offset (``row * ...``)."""
    return "".join(
        line for line in linecache.getlines(filename) if re.search(r"\brow\w*\s*\*", line)
    )


def _floor_division(source: str, message: str) -> str:
    """The hint when the failing line divides with ``//`` and the error is about a float type:
    Triton defines floor division for integers only."""
    if "//" not in source or not re.search(r"fp(16|32|64)|bf16|float", message):
        return ""
    return (
        "`//` is floor division, which Triton defines for integers only, and this line divides "
        "a float block: divide with `/` (a mean is `tl.sum(x, axis=0) / n_cols`)."
    )


def _broadcast_load(filename: str, source: str, frame_locals: dict) -> str:
    """The hint when a 2-D block on the failing line was loaded through a vector of pointers with
    a 2-D mask (``tl.load(target_ptr + rows, mask=row_ok[:, None])``): the mask made the load
    2-D."""
    try:
        tree = ast.parse(textwrap.dedent("".join(linecache.getlines(filename))))
    except SyntaxError:
        return ""
    for name, shape, _ in _blocks_on_line(source, frame_locals):
        if len(shape) != 2:
            continue
        for value in _assigned_values(tree, name):
            loads = [n for n in ast.walk(value) if _tl_call(n) == "load" and n.args]
            for load in loads:
                mask = next((k.value for k in load.keywords if k.arg == "mask"), None)
                if mask is None or _placements(load.args[0]) or not _placements(mask):
                    continue
                pointer_names = {n.id for n in ast.walk(load.args[0]) if isinstance(n, ast.Name)}
                shapes = [getattr(frame_locals.get(n), "shape", None) for n in pointer_names]
                if any(sh is not None and len(sh) > 1 for sh in shapes):
                    continue
                return (
                    f"`{name}` is {shape[0]} x {shape[1]}: it was loaded through a vector of "
                    f"pointers, `{ast.unparse(load.args[0])}`, with a 2-D mask, "
                    f"`{ast.unparse(mask)}`, and the mask made the load a 2-D block (each "
                    "lane of the mask reads a pointer of the vector). Give a vector of pointers "
                    "a vector mask (without `[:, None]`)."
                )
    return ""


_HOST_CALL = re.compile(r"\b(math|np|numpy|torch)\.(\w+)\s*\(")


def _host_call(source: str) -> str:
    """The hint when the failing line calls a Python library's function (``math.exp``,
    ``np.sqrt``) on the kernel's values; "" otherwise."""
    found = _HOST_CALL.search(source)
    if not found:
        return ""
    library, function = found.groups()
    return (
        f"`{library}.{function}` runs on Python (or NumPy, torch) numbers on the host; inside a "
        "`@triton.jit` kernel the values are Triton's, and only `tl` functions work on them: "
        f"use `tl.{function}` if it exists (`tl.exp`, `tl.log`, `tl.sqrt`, `tl.maximum`, "
        "`tl.abs`, ...)."
    )


def _block_through_scalar(message: str) -> str:
    """The hint when a block of values was stored through one pointer; "" otherwise."""
    if "cannot be block type if pointer argument is not a block" not in message:
        return ""
    return (
        "you store a block of values (one per lane) through a single pointer: to store one "
        "number, reduce the block first (e.g. `tl.sum(acc, axis=0)`); to store one value per "
        "lane, give a block of pointers (`out_ptr + offsets`) and a mask."
    )


# --- comparing ------------------------------------------------------------------------------


def compare(case: TritonCase, args: dict[str, object]) -> Mismatch | None:
    """The first output that differs from the expected one, or None."""
    for name in case.outputs:
        got = args[name].detach().float().cpu().numpy()
        expected = np.asarray(case.expected[name].detach().float().cpu().numpy())
        found = mismatch_of(name, got, expected, unwritten(args[name]), case.rtol, case.atol)
        if found is not None:
            return found
    return None


def _changed_input(case: TritonCase, before: dict, after: dict) -> str | None:
    """'`x` (x[3] was 0.5, now 1.5)' for the first input tensor the launch changed, or None."""
    for name, value in before.items():
        if name in case.outputs or not _is_tensor(value):
            continue
        changed = changed_element(name, value.cpu().numpy(), after[name].cpu().numpy())
        if changed:
            return changed
    return None


# --- the compile check ---------------------------------------------------------------------------


def compile_problem(function, case: TritonCase) -> tuple[str, str] | None:
    """(what, hint) when the kernel does not compile for a GPU, else None."""
    return _compile_check(function, case)[0]


def _not_compiled(why: str) -> str:
    """The sentence a verdict carries when the GPU compile check could not judge the kernel."""
    why = " ".join(why.split())
    why = why if len(why) <= 120 else why[:117] + "..."
    return (
        " The checker could not compile it for a GPU here (" + why.rstrip(".") + "), so it was "
        "judged in the interpreter only: code that a GPU's compiler refuses would pass too."
    )


def _compile_check(function, case: TritonCase) -> tuple[tuple[str, str] | None, str | None]:
    """(:func:`compile_problem`'s answer, None when the kernel was seen to compile for sm_80,
    else why the compiler could not judge it: it could not run here, or itself failed)."""
    from ..triton_tools import triton_ir

    signature, constexprs = triton_ir.signature_of(
        function, list(case.args.values()), case.constexprs
    )
    outcome = triton_ir.check(function, signature, constexprs, "sm_80")
    if outcome is None:
        return None, None
    if outcome[0] == "unavailable":
        return None, outcome[1]
    problem = _compile_failure(function, outcome)
    return problem, None if problem else _INTERNAL.sub("...", f"{outcome[0]}: {outcome[1]}")


def _compile_failure(function, outcome) -> tuple[str, str] | None:
    kind, message, node_line = outcome
    if "ptxas" in message.lower() or "PTXAS" in kind:
        return (
            "Correct in the interpreter, but the GPU's assembler (ptxas) rejected the compiled "
            "kernel.",
            "use smaller blocks, or fewer values live at once.",
        )
    if kind not in (
        "CompilationError",
        "CompileTimeAssertionFailure",
        "UnsupportedLanguageConstruct",
    ):
        return None  # the compiler itself failed: not the learner's fault, say nothing
    try:  # the compiler counts lines from the `def` (decorators left out)
        lines, first = inspect.getsourcelines(function)
        first += next(i for i, text in enumerate(lines) if text.lstrip().startswith("def "))
    except (OSError, TypeError, StopIteration):
        first = None
    line = first + node_line - 1 if first and node_line else None
    filename = function.__code__.co_filename
    source = linecache.getline(filename, line).strip() if line else ""
    reason = [part for part in message.strip().splitlines() if part.strip()]
    reason = _INTERNAL.sub("...", reason[-1]) if reason else kind
    where = f"line {line}: `{source}`" if line else "one line of your kernel"
    carried = re.search(
        r"Loop-carried variable (\w+) has initial type (.+?) but is re-assigned to (.+?) in loop",
        message,
    )
    if carried:
        name, before, after = carried.groups()
        return (
            "Correct in the interpreter, but Triton's compiler rejects it for a GPU at "
            f"{where}: `{name}` enters the loop as {before} and leaves it as {after}.",
            f"a compiled loop keeps each variable's type: start `{name}` as what the loop "
            f"makes of it, e.g. `{name} = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)` for a "
            f"block (or keep it a scalar and add `tl.sum(...)` of each block to it).",
        )
    operands = operand_problem(message, source)
    if operands:
        return (
            "Correct in the interpreter, but Triton's compiler rejects it for a GPU at "
            f"{where} ({reason}).",
            operands,
        )
    return (
        "Correct in the interpreter, but Triton's compiler rejects it for a GPU at "
        f"{where} ({reason}).",
        "the interpreter runs any Python; a compiled kernel may only use `tl` operations on "
        "blocks, `if`/`for`/`while` on scalars and constexprs, and no Python objects such as "
        "lists, strings built at run time, NumPy or torch calls.",
    )


# --- what the kernel's source shows ------------------------------------------------------------

#: ``tl`` functions called for what they do, not for a value: a call of any other whose result
#: is thrown away changes nothing.
_EFFECTS = {
    "store",
    "debug_barrier",
    "device_print",
    "static_print",
    "static_assert",
    "device_assert",
}


def _tl_call(node) -> str:
    """'dot' for a call ``tl.dot(...)`` (any module alias ending in ``tl`` or ``language``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        if isinstance(owner, ast.Name) and owner.id in ("tl", "language", "triton_language"):
            return node.func.attr
    return ""


def _discarded(tree, first: int) -> tuple[int, str, str] | None:
    """(line, function, text) of a ``tl`` call used as a statement whose result is lost
    (``tl.dot(a, b, acc)`` on its own line)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr):
            name = _tl_call(node.value)
            if name and name not in _EFFECTS and not name.startswith("atomic_"):
                return first + node.lineno - 1, name, ast.unparse(node.value)
    return None


def _outputs_read(function, tree, first: int, outputs: Sequence[str]) -> tuple[int, str] | None:
    """(line, name) of a ``tl.load`` whose address is built from an output's pointer (directly
    or through names derived from it)."""
    derived = _provenance(function, set(outputs))
    for node in ast.walk(tree):
        if _tl_call(node) == "load" and node.args:
            used = {n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)}
            hit = sorted(set().union(*(derived.get(u, set()) for u in used)) & set(outputs))
            if hit:
                return first + node.lineno - 1, hit[0]
    return None


def _chained_mask(tree, first: int) -> tuple[int, str] | None:
    """(line, text) of a comparison with ``&`` or ``|`` inside it unparenthesised:
    ``a < M & b < N`` is Python's chained comparison ``a < (M & b) < N``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            if len(node.ops) > 1 and any(
                isinstance(p, ast.BinOp) and isinstance(p.op, ast.BitAnd | ast.BitOr) for p in parts
            ):
                return first + node.lineno - 1, ast.unparse(node)
    return None


def _infinite_dot_operand(tree, first: int) -> tuple[int, str] | None:
    """(line, name) of a block loaded with ``other=`` an infinity and then multiplied in a
    ``tl.dot``: its padded lanes make inf - inf or inf x 0, NaN, in the dot product."""
    padded = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _tl_call(node.value) == "load":
            other = next((k.value for k in node.value.keywords if k.arg == "other"), None)
            if other is not None and "inf" in ast.unparse(other):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        padded[target.id] = first + node.lineno - 1
    for node in ast.walk(tree):
        if _tl_call(node) == "dot":
            used = {n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)}
            hit = sorted(used & set(padded))
            if hit:
                return padded[hit[0]], hit[0]
    return None


def _stores(function) -> bool:
    """Whether the kernel's source calls ``tl.store``."""
    tree, _, _ = _kernel_tree(function)
    return tree is not None and any(_tl_call(n) == "store" for n in ast.walk(tree))


def _chained_mask_hint(function, tree=None, first: int = 0) -> tuple[str, str] | None:
    """(what, hint) for an unparenthesised ``a < M & b < N`` in the kernel (the tree parsed
    here unless given), else None."""
    if tree is None:
        tree, first, _ = _kernel_tree(function)
    chained = _chained_mask(tree, first) if tree is not None else None
    if chained is None:
        return None
    line, text = chained
    return (
        f"Line {line} compares with `&` between two comparisons, unparenthesised: `{text}`.",
        "in Python `&` binds tighter than `<`, so `a < M & b < N` is the chained comparison "
        "`a < (M & b) < N`, not two bounds joined: parenthesise each, "
        "`(offs_m[:, None] < M) & (offs_n[None, :] < N)`.",
    )


def _placements(node) -> dict[str, set[int]]:
    """For each name indexed ``x[:, None]`` (laid along axis 0) or ``x[None, :]`` (axis 1) in an
    expression, the axes it is laid along."""
    found: dict[str, set[int]] = {}
    for sub in ast.walk(node):
        if not (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name)):
            continue
        if not (isinstance(sub.slice, ast.Tuple) and len(sub.slice.elts) == 2):
            continue
        nones = [isinstance(e, ast.Constant) and e.value is None for e in sub.slice.elts]
        if nones in ([False, True], [True, False]):
            found.setdefault(sub.value.id, set()).add(0 if nones[1] else 1)
    return found


def _placements_defined(tree, node) -> dict[str, set[int]]:
    """:func:`_placements` of an expression and of what its names were assigned (a pointer
    block built on an earlier line)."""
    laid = _placements(node)
    for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}:
        for value in _assigned_values(tree, name):
            for index, axes in _placements(value).items():
                laid.setdefault(index, set()).update(axes)
    return laid


def _assigned_values(tree, name: str) -> list[ast.AST]:
    """Every expression assigned to ``name`` (``=`` or ``+=``) in the kernel."""
    values = []
    for node in ast.walk(tree):
        assigned = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        )
        if assigned or (
            isinstance(node, ast.AugAssign) and getattr(node.target, "id", None) == name
        ):
            values.append(node.value)
    return values


def access_source_hint(filename: str, line: int | None) -> str:
    """What the source of the failing ``tl.load``/``tl.store`` shows, or "": an index laid along
    one axis in the pointers and along the other in the mask (``offs_k[:, None]`` in b's
    pointers, ``offs_k[None, :]`` in its mask); a pointer that the loop advances and the load
    offsets again by the loop's variable (the K offset counted twice)."""
    if not line:
        return ""
    try:
        tree = ast.parse(textwrap.dedent("".join(linecache.getlines(filename))))
    except SyntaxError:
        return ""
    calls = [
        n
        for n in ast.walk(tree)
        if _tl_call(n) in ("load", "store") and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    return _call_source_hint(tree, calls[0]) if calls else ""


def _through_names(tree, node, found, depth: int = 4) -> bool:
    """Whether ``found(expression)`` holds for an expression or, up to ``depth`` assignments
    back, for what the names it reads were assigned."""
    if found(node):
        return True
    if depth == 0:
        return False
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return any(
        _through_names(tree, value, found, depth - 1)
        for name in names
        for value in _assigned_values(tree, name)
    )


def _reaches(tree, node, wanted: str) -> bool:
    """Whether an expression uses ``tl.<wanted>`` itself or through the names it reads."""
    return _through_names(tree, node, lambda n: any(_tl_call(x) == wanted for x in ast.walk(n)))


def _lane_mask(tree, pointer, mask) -> str:
    """The text of a mask's compared operand that is a bare ``tl.arange`` (or a name made only
    of one), when the pointers reach ``tl.program_id``: a lane index compared with a size."""
    if mask is None or not _reaches(tree, pointer, "program_id"):
        return ""
    moved = {n.target.id for n in ast.walk(tree) if isinstance(n, ast.AugAssign)} & {
        n.id for n in ast.walk(pointer) if isinstance(n, ast.Name)
    }
    if moved:  # pointers that move along (a matmul's K loop): a lane index against what is left
        return ""
    masks = [mask]
    if isinstance(mask, ast.Name):
        masks = _assigned_values(tree, mask.id) or [mask]
    for expression in masks:
        for compare in (n for n in ast.walk(expression) if isinstance(n, ast.Compare)):
            if not all(isinstance(c, ast.Name) for c in compare.comparators):
                continue  # `offs_k < K - k`: a lane index against what is left, not a size
            left = compare.left
            if isinstance(left, ast.Subscript):
                left = left.value
            aranges = [left] if _tl_call(left) == "arange" else []
            if isinstance(left, ast.Name):
                values = _assigned_values(tree, left.id)
                if values and all(_tl_call(v) == "arange" for v in values):
                    aranges = values
            for arange in aranges:
                size = arange.args[-1] if arange.args else None
                if isinstance(size, ast.Name) and _block_start(tree, pointer, size.id):
                    return ast.unparse(compare.left)
    return ""


def _is_program_id(tree, node) -> bool:
    """``tl.program_id(...)`` itself, or a name only ever assigned one."""
    if _tl_call(node) == "program_id":
        return True
    if isinstance(node, ast.Name):
        values = _assigned_values(tree, node.id)
        return bool(values) and all(_tl_call(v) == "program_id" for v in values)
    return False


def _block_start(tree, node, size: str) -> bool:
    """Whether an expression (or a name it reads) holds ``program_id * size``: the start of a
    1-D kernel's block of ``size`` lanes (not a row's start, ``row * stride``)."""

    def product(expression) -> bool:
        for sub in ast.walk(expression):
            if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Mult):
                sides = (sub.left, sub.right)
                named = any(isinstance(x, ast.Name) and x.id == size for x in sides)
                if named and any(_is_program_id(tree, x) for x in sides):
                    return True
        return False

    return _through_names(tree, node, product)


def _call_source_hint(tree, call: ast.Call) -> str:
    """:func:`access_source_hint` for one ``tl.load``/``tl.store`` call of the kernel's tree."""
    if not call.args:
        return ""
    pointer = call.args[0]
    mask = next((k.value for k in call.keywords if k.arg == "mask"), None)
    laid = _placements_defined(tree, pointer)
    if mask is not None:
        for index, axes in _placements_defined(tree, mask).items():
            if index in laid and len(laid[index]) == 1 and not axes & laid[index]:
                p_axis = next(iter(laid[index]))
                m_axis = next(iter(axes))
                form = {0: "[:, None]", 1: "[None, :]"}
                return (
                    f"the pointers lay `{index}` along axis {p_axis} (`{index}{form[p_axis]}`) "
                    f"but the mask lays it along axis {m_axis} (`{index}{form[m_axis]}`): the "
                    "mask then bounds the other dimension of the block, and the lanes past "
                    f"the end of `{index}`'s dimension get through. Index it the same way in "
                    f"both: `{index}{form[p_axis]}` in the mask too."
                )
    lane = _lane_mask(tree, pointer, mask)
    if lane:
        return (
            f"the mask compares `{lane}`, a lane's index inside the block (0 to BLOCK_SIZE - 1 "
            "in every program), with the size, while the pointers move with the program's "
            "`tl.program_id`: every lane of a later program passes it. Compare the same "
            "offsets the pointers use (the block's start plus the lane) with the size."
        )
    for loop in (n for n in ast.walk(tree) if isinstance(n, ast.For)):
        if not (loop.lineno <= call.lineno <= (loop.end_lineno or loop.lineno)):
            continue
        if not isinstance(loop.target, ast.Name):
            continue
        var = loop.target.id
        advanced = {
            n.target.id
            for n in ast.walk(loop)
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
        }
        if not isinstance(pointer, ast.BinOp):
            continue
        base = [n.id for n in ast.walk(pointer) if isinstance(n, ast.Name) and n.id in advanced]
        uses_var = any(isinstance(n, ast.Name) and n.id == var for n in ast.walk(pointer))
        if base and uses_var:
            return (
                f"`{base[0]}` moves forward every step of the `for {var} in ...` loop (its "
                f"`+=`), and this access adds an offset from `{var}` to it as well: the offset "
                "along the loop's dimension is counted twice, so step j reads block 2j. Do "
                f"one or the other: advance the pointers, or offset them by `{var}` from "
                "fixed base pointers."
            )
    return ""


def source_hint(function, outputs: Sequence[str]) -> tuple[str, str] | None:
    """(what the kernel's source shows, a hint) for a kernel whose results are wrong, from its
    code alone: an unparenthesised mask, an output read back, a value computed and dropped."""
    tree, first, _ = _kernel_tree(function)
    if tree is None:
        return None
    chained = _chained_mask_hint(function, tree, first)
    if chained:
        return chained
    read = _outputs_read(function, tree, first, outputs)
    if read:
        line, name = read
        return (
            f"Line {line} loads from `{name}`, an output: it holds whatever was there before "
            "the launch (the checker fills it with NaN).",
            f"`{name}` is written, not read: compute each value from the inputs and store it "
            "(overwrite, do not add to what the output held), reading every input from its "
            "own pointer with its own strides.",
        )
    infinite = _infinite_dot_operand(tree, first)
    if infinite:
        line, name = infinite
        return (
            f"Line {line} pads `{name}` with an infinity (`other=`), and `{name}` goes into a "
            "`tl.dot`.",
            "in a dot product the padded lanes meet other values: inf x 0 and inf - inf are "
            "NaN, which spreads to the whole row. Load the operands with `other=0.0` (a zero "
            "adds nothing to a dot product) and give the padded columns of the result -inf, "
            "`tl.where(cols[None, :] < vocab, logits, -float('inf'))`.",
        )
    for call in (n for n in ast.walk(tree) if _tl_call(n) in ("load", "store")):
        found = _call_source_hint(tree, call)
        if found:
            text = ast.unparse(call)
            text = text if len(text) <= 90 else text[:87] + "..."
            return f"Line {first + call.lineno - 1}: `{text}`.", found
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
            and _tl_call(node.value) == "dot"
            and len(node.value.args) >= 3
            and isinstance(node.value.args[2], ast.Name)
            and node.value.args[2].id == node.target.id
        ):
            name = node.target.id
            return (
                f"Line {first + node.lineno - 1}: `{ast.unparse(node)}`.",
                f"`tl.dot(a, b, {name})` already returns `{name} + a @ b`, and `+=` adds that "
                f"to `{name}` again: each step doubles what `{name}` held. Write either "
                f"`{name} = tl.dot(a, b, {name})` or `{name} += tl.dot(a, b)`.",
            )
    dropped = _discarded(tree, first)
    if dropped:
        line, name, text = dropped
        return (
            f"Line {line} computes `{text}` and throws the result away.",
            f"Triton's functions return a new value and change nothing in place: assign the "
            f"result of `tl.{name}`"
            + (
                ", `acc = tl.dot(a, b, acc)`." if name == "dot" else ", `x = tl." + name + "(...)`."
            ),
        )
    return None


# --- the exercise -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """What the learner's kernel did on inputs a hint chose to tell causes apart (square
    matrices in one tile, identical rows, one block): ``mismatch`` None when it was right, ``error`` the
    launch's failure, if any (then ``mismatch`` is None too)."""

    mismatch: Mismatch | None = None
    error: LaunchError | None = None

    @property
    def right(self) -> bool:
        return self.mismatch is None and self.error is None


def _launch(kernel, function, case: TritonCase, args: dict[str, object]) -> LaunchError | None:
    """Launch ``kernel`` on ``args`` (guarded on the simulator); the failure explained, or None.
    A stub's NotImplementedError becomes ``NotAttempted``."""
    values = [*args.values(), *case.constexprs.values()]
    names = list(inspect.signature(function).parameters)
    try:
        if runtime.mode == "simulator":
            with guarded(args, names, function), np.errstate(all="ignore"):
                kernel[case.grid](*values)
        else:
            kernel[case.grid](*values)
            import torch

            torch.cuda.synchronize()
    except NotImplementedError as error:
        raise NotAttempted from error
    except Exception as error:
        return explain(error, function.__code__.co_filename)
    return None


def _probe(kernel, function, case: TritonCase) -> Probe:
    """Run the kernel on a case a hint chose and compare, as for the checker's own cases."""
    args = fresh_args(case)
    error = _launch(kernel, function, case, args)
    if error is not None:
        return Probe(error=error)
    return Probe(mismatch=compare(case, args))


def _takes_probe(explain_with: Callable) -> bool:
    """A hint (or error hint) that takes a third argument gets ``probe(case) -> Probe``."""
    try:
        return len(inspect.signature(explain_with).parameters) >= 3
    except (TypeError, ValueError):
        return False


#: The test suite's seed for every Triton check's inputs (tests/conftest.py sets it): a learner's
#: check draws fresh random inputs each time, a test run the same ones, so that a hint whose
#: evidence depends on the draw cannot fail one run in many.
SEED_VARIABLE = "GPU_COURSE_CHECK_SEED"


def _test_seed() -> int | None:
    value = os.environ.get(SEED_VARIABLE, "")
    return int(value) if value.isdigit() else None


def triton_exercise(
    *,
    id: str,  # noqa: A002 - the registry's field name
    chapter: str,
    title: str,
    signature: str,
    launch_text: str,
    cases: Callable[[np.random.Generator], list[TritonCase]],
    hint: Callable[[TritonCase, Mismatch], str],
    error_hint: Callable[[TritonCase, LaunchError], str] | None = None,
    seed: int | None = None,
    time_limit: float = 20.0,
    compiles: bool = True,
) -> Exercise:
    """An Exercise that launches the learner's Triton kernel on each case and explains failures.

    ``hint(case, mismatch)`` names the likely mistake from a wrong output; ``error_hint(case,
    error)`` may replace the generic hint of a launch error ("" keeps it). Either may take a
    third argument, ``probe``: ``probe(chosen_case)`` launches the learner's kernel on inputs
    the hint chooses to tell causes apart and returns a ``Probe`` (each costs one launch in
    the interpreter). ``seed`` fixes the inputs (tests); by default every check draws fresh
    random data.
    """
    documented = documented_arguments(signature)
    probing = {f: _takes_probe(f) for f in (hint, error_hint) if f is not None}

    def run_case(kernel, function, case: TritonCase) -> CheckResult | None:
        args = fresh_args(case)
        values = [*args.values(), *case.constexprs.values()]
        wrong_call = signature_problem(function, len(values), documented)
        if wrong_call:
            return failed(id, wrong_call, f"the expected signature is {signature}.")
        before = {n: _copy(v) if _is_tensor(v) else v for n, v in args.items()}
        names = list(inspect.signature(function).parameters)
        positions = {n: i for i, n in enumerate(args)}  # the documented order
        output_params = [
            names[positions[o]] for o in case.outputs if positions.get(o, len(names)) < len(names)
        ]
        problem = _launch(kernel, function, case, args)

        def probe(chosen: TritonCase) -> Probe:
            return _probe(kernel, function, chosen)

        def explained(explain_with, *evidence) -> str:
            if explain_with is None:
                return ""
            return (
                explain_with(*evidence, probe) if probing[explain_with] else explain_with(*evidence)
            )

        if problem is not None:
            chained = _chained_mask_hint(function) if problem.kind == "out_of_bounds" else None
            if chained:
                return failed(id, f"With {case.label}: {problem.text} {chained[0]}", chained[1])
            why = explained(error_hint, case, problem) or problem.hint
            return failed(id, f"With {case.label}: {problem.text}", why)
        changed = _changed_input(case, before, args)
        if changed:
            return changed_input_failure(
                id, case.label, changed, case.outputs, "store only through the output pointer"
            )
        mismatch = compare(case, args)
        if mismatch is None:
            return None
        foreign = foreign_strides(function, names)
        if foreign and not mismatch.unwritten.all():
            line, tensor, stride, owner, mine = foreign[0]
            return failed(
                id,
                f"With {case.label}: {mismatch.describe()}",
                f"line {line} builds the pointers into `{tensor}` with `{stride}`, the stride "
                f"of `{owner}`: each tensor has its own layout"
                + (f"; use `{mine}` for `{tensor}`." if mine else "."),
            )
        shown = source_hint(function, output_params)
        if shown:
            return failed(id, f"With {case.label}: {mismatch.describe()} {shown[0]}", shown[1])
        if mismatch.unwritten.all() and _stores(function):
            return failed(
                id,
                f"With {case.label}: {wrote_nothing_text([mismatch.name])}",
                "your kernel calls `tl.store`, yet no element was written: every lane's mask "
                "was False, or the addresses fell elsewhere. Check the offsets each program "
                "computes from its index, `tl.program_id(0)` (`tl.num_programs(0)` is the "
                "number of programs, the same for all), and the mask they are compared with.",
            )
        if mismatch.unwritten.all():
            return failed(
                id,
                f"With {case.label}: {wrote_nothing_text([mismatch.name])}",
                "end the kernel with `tl.store(<output pointers>, <values>, mask=...)`: a "
                "Triton kernel returns nothing, it stores its results.",
            )
        return failed(
            id, f"With {case.label}: {mismatch.describe()}", explained(hint, case, mismatch)
        )

    def run(answer) -> CheckResult:
        function, problem = kernel_function(answer)
        if problem is not None:
            return failed(id, *problem)
        try:
            kernel = triton_module().jit(function)
        except Exception as error:  # e.g. source that cannot be read back
            return failed(
                id,
                f"Triton could not read your kernel ({type(error).__name__}).",
                "define the kernel in a notebook cell or a file, with `@triton.jit` above `def`.",
            )
        rng = np.random.default_rng(seed if seed is not None else _test_seed())
        all_cases = cases(rng)
        result = run_cases(id, all_cases, lambda case: run_case(kernel, function, case))
        if result is not None:
            return result
        detail = correct_on(all_cases)
        if compiles and runtime.mode == "simulator":
            problem, skipped = _compile_check(function, all_cases[0])
            if problem is not None:
                return failed(id, *problem)
            # said only when the compiler ran and accepted it; a skipped check is said too
            detail += _not_compiled(skipped) if skipped else " It also compiles for a GPU (sm_80)."
        return passed(id, detail)

    return Exercise(
        id=id,
        chapter=chapter,
        title=title,
        signature=signature,
        launch=launch_text,
        run=run,
        kind="function",
        time_limit=time_limit,
    )


__all__ = [
    "LaunchError",
    "OutOfBounds",
    "Probe",
    "TritonCase",
    "compile_problem",
    "explain",
    "foreign_strides",
    "guarded",
    "jit_function",
    "kernel_function",
    "register_reducer",
    "triton_exercise",
    "triton_module",
]


# --- helpers the Triton chapters' checkers share (chapter 12, its ramp and backward parts, 13) ---


def torch_module():
    """torch, imported when a Triton check first needs it."""
    import torch

    return torch


def tensor(array: np.ndarray, dtype=None):
    """A torch tensor of ``array`` (contiguous), cast to ``dtype`` when given."""
    torch = torch_module()
    result = torch.from_numpy(np.ascontiguousarray(array))
    return result.to(dtype) if dtype is not None else result


def nan_tensor(*shape):
    """A float32 torch tensor of NaN: an output the kernel must overwrite."""
    return torch_module().full(shape, float("nan"))


def cdiv(n: int, block: int) -> int:
    """Blocks of ``block`` that cover ``n`` (``triton.cdiv``)."""
    return (n + block - 1) // block


def _small_error(mismatch: Mismatch) -> float | None:
    """The largest relative error of the wrong elements when it lies in 1e-4..1e-2 (the size
    of float16 rounding) and every wrong element is finite and written; else None."""
    bad = mismatch.wrong
    if not bad.any() or mismatch.unwritten.any():
        return None
    got, want = mismatch.got[bad].astype(np.float64), mismatch.expected[bad].astype(np.float64)
    if not (np.isfinite(got).all() and np.isfinite(want).all()):
        return None
    with np.errstate(all="ignore"):
        relative = np.abs(got - want) / np.maximum(np.abs(want), 1e-30)
    top = float(relative.max())
    return top if 1e-4 <= top <= 1e-2 else None


def observed_relation(case: TritonCase, mismatch: Mismatch) -> str:
    """A sentence on how the wrong values relate to the right ones, when ``_evidence`` finds a
    relation that says something (a factor, an offset, a shift, another row's values); ""
    otherwise. A factor that reads as 1 or an offset that reads as 0 says nothing: a small
    relative error is reported as the size of float16 rounding instead."""
    relation = ev.find_relation(
        mismatch.got,
        mismatch.expected,
        rtol=case.rtol,
        atol=case.atol,
        poisoned=mismatch.unwritten,
    )
    small = _small_error(mismatch)
    trivial = relation is not None and (
        (relation.kind == "constant_factor" and f"{relation.value:.4g}" == "1")
        or (relation.kind == "offset" and f"{relation.value:.4g}" in ("0", "-0"))
    )
    if small is not None and (relation is None or trivial):
        return (
            f" Observed: the wrong values differ from the right ones by at most {small:.1e} "
            "relative, the size of float16 rounding (about 3 decimal digits): some quantity "
            "is computed or accumulated in float16; keep it in float32."
        )
    if trivial:
        return ""
    if relation is None or relation.kind in ("unwritten", "nonfinite", "candidate"):
        return ""
    where = " (on the wrong elements)" if relation.subset else ""
    return f" Observed: {relation.describe()}{where}."


def row_start(
    case: TritonCase,
    mismatch: Mismatch,
    right: np.ndarray,
    out: str = "out_ptr",
    stride_arg: str = "out_row_stride",
    input_stride_arg: str = "x_row_stride",
) -> str:
    """For a kernel of one program per row whose output rows are ``right``: the hint when the
    stored values are right rows placed at the wrong start, program r's row at ``out_ptr + r *
    k`` for a k other than the output's row stride (the programs run in order, so a later row
    overwrites an earlier one where they overlap, as in Triton's interpreter). "" otherwise."""
    rows, cols = right.shape
    stride = int(case.args[stride_arg])
    block = int(case.constexprs.get("BLOCK_SIZE", 0))
    candidates = {
        1: f"`{out} + row`, one element per row",
        0: f"`{out}` itself, every row at the start",
    }
    candidates.setdefault(
        int(case.args.get(input_stride_arg, stride)),
        f"the input's row stride, `{input_stride_arg}`",
    )
    if block:
        candidates.setdefault(block, "`BLOCK_SIZE`")
    got = mismatch.got.reshape(-1)
    for k, what in candidates.items():
        if k == stride:
            continue
        placed = np.full(got.size, np.nan, dtype=np.float64)
        for r in range(rows):
            start = r * k
            stop = min(start + cols, got.size)
            if stop > start:
                placed[start:stop] = right[r, : stop - start]
        if np.array_equal(np.isnan(placed), np.isnan(got)) and np.allclose(
            got[~np.isnan(got)], placed[~np.isnan(placed)], rtol=1e-3, atol=1e-5
        ):
            return (
                f"the values you stored are right rows in the wrong places: program r stored "
                f"its row at `{out} + r * {k}` ({what}), so "
                + (
                    "the rows overlap, each one overwriting part of the row before, "
                    if 0 <= k < cols
                    else "the rows land at the wrong offsets, "
                )
                + f"and part of the output is never written. Its row r starts at `{out} + "
                f"r * {stride_arg}` ({stride} here): use the output's own row stride."
            )
    return ""
