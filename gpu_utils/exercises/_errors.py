"""A kernel's exception in the learner's terms (chapter 03 onwards): the exception, the line of the
cell and its text, which array was indexed and how big it is, and a hint keyed to the cause.

numba-cuda's simulator prefixes every message with ``tid=[x, y, z] ctaid=[x, y, z]:`` and names
its own classes (``FakeCUDAModule``); none of that reaches the learner. The course's simulator
(``gpu_utils.sim``, ``GPU_COURSE_SIM=course``) gives the same facts as attributes of its errors
(``thread``, ``block``, ``line``, ``cause``; an ``IndexOutOfBounds`` also ``index``, ``axis``,
``size``), which are read instead of the text, so that both engines give the same account. The line comes from the traceback
frame of the learner's own function; its text from ``linecache``, where the checker's process
registers the cell's source that the notebook sent with the kernel.
"""

from __future__ import annotations

import ast
import difflib
import linecache
import re

_SIM_PREFIX = re.compile(r"tid=\[(\d+), (\d+), (\d+)\] ctaid=\[(\d+), (\d+), (\d+)\]:?\s*")
_OUT_OF_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)")
_FLOAT_INDEX = "only integers, slices"
_NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")
_NOT_DEFINED = re.compile(r"name '(\w+)' is not defined")


class KernelError(str):
    """What went wrong in a launch: a ``str`` (the sentence for the learner) with attributes.

    ``kind`` is one of ``"out_of_bounds"`` (with ``array``, ``is_global``, ``index``, ``axis``,
    ``size``), ``"extra_threads"`` (a thread whose own global index is past the end of a kernel
    argument: the grid has more threads than elements, the missing-guard mistake), ``"float_index"``,
    ``"name"``, ``"warp"`` or ``"other"``; ``hint`` is the generic fix, ``exc_type``, ``line``
    and ``source`` say where, ``thread`` and ``block`` (``(x, y, z)`` each, or None) which thread
    failed. Chapter hints read these attributes; none parses the text.
    """

    kind: str
    hint: str
    exc_type: str
    line: int | None
    source: str
    thread: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    array: str
    is_global: bool
    index: int | None
    axis: int | None
    size: int | None

    def __new__(cls, kind: str, text: str, hint: str, **details) -> KernelError:
        self = super().__new__(cls, text)
        self.kind, self.hint = kind, hint
        defaults = dict(exc_type="", line=None, source="", thread=None, block=None)
        defaults.update(array="", is_global=False)
        defaults.update(index=None, axis=None, size=None)
        for name, value in {**defaults, **details}.items():
            setattr(self, name, value)
        return self

    @property
    def text(self) -> str:
        return str.__str__(self)


def clean(message: str) -> str:
    """The simulator's message without its thread prefix or class names."""
    message = _SIM_PREFIX.sub("", message.strip())
    message = message.replace("'FakeCUDAModule' object", "`cuda`")
    return re.sub(r"'Fake\w+' object", "this object", message)


def _dim3(value) -> tuple[int, int, int] | None:
    if isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, int) for v in value):
        return value
    return None


def _location(error: BaseException, raw: str) -> tuple[tuple, tuple] | None:
    """(thread, block) of the failing thread: the course simulator's attributes, else numba's
    ``tid=[..] ctaid=[..]`` prefix, else None."""
    thread, block = _dim3(getattr(error, "thread", None)), _dim3(getattr(error, "block", None))
    if thread is not None and block is not None:
        return thread, block
    match = _SIM_PREFIX.search(raw)
    if not match:
        return None
    numbers = tuple(int(g) for g in match.groups())
    return numbers[:3], numbers[3:]


def _thread(location) -> str:
    if location is None:
        return ""
    (tx, ty, tz), (bx, by, bz) = location
    return f"thread ({tx}, {ty}, {tz}) of block ({bx}, {by}, {bz})"


def _bounds(error: BaseException, message: str) -> tuple[int, int, int] | None:
    """(index, axis, size) of an index outside an array: the course simulator's attributes,
    else numpy's text (numba's simulator)."""
    if not isinstance(error, IndexError):
        return None
    facts = tuple(getattr(error, name, None) for name in ("index", "axis", "size"))
    if all(isinstance(v, int) for v in facts):
        return facts
    found = _OUT_OF_BOUNDS.search(message)
    return tuple(int(g) for g in found.groups()) if found else None


def _learner_frame(traceback, code):
    """The innermost traceback entry that runs the learner's function (or a function of its
    cell), or None."""
    found = None
    while traceback is not None:
        frame_code = traceback.tb_frame.f_code
        if frame_code is code or (code is not None and frame_code.co_filename == code.co_filename):
            found = traceback
        traceback = traceback.tb_next
    return found


def parse_line(source: str) -> ast.Module | None:
    """One line of code parsed on its own (a line that opens a block, `if a[i] > 0:`, gets a
    body), or None when it is not a whole statement."""
    text = source.strip()
    for attempt in (text, text + " pass", text.removesuffix(":") + ": pass"):
        try:
            return ast.parse(attempt)
        except SyntaxError:
            continue
    return None


def _subscripted(source: str) -> list[str]:
    """Names indexed on a line of code, in order: ``out[i] = a[i] + s[j]`` gives out, a, s."""
    tree = parse_line(source)
    if tree is None:
        return re.findall(r"(\w+)\s*\[", source)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            names.append(node.value.id)
    return names


def _which_array(frame, source: str, axis: int, size: int) -> tuple[list[str], bool, int]:
    """The names of the arrays on the line whose axis has this size, whether all are kernel
    arguments, and their number of dimensions."""
    if frame is None:
        return [], False, 0
    code = frame.f_code
    parameters = code.co_varnames[: code.co_argcount]
    names, all_global, ndim = [], True, 0
    for name in dict.fromkeys(_subscripted(source)):
        value = frame.f_locals.get(name, frame.f_globals.get(name))
        shape = getattr(value, "shape", None)
        if shape is not None and len(shape) > axis and shape[axis] == size:
            names.append(name)
            ndim = len(shape)
            all_global &= name in parameters or type(value).__name__.startswith("Fake")
    if not names:
        return [], False, 0
    return names, all_global, ndim


def _largest_argument(frame, axis: int, ndim: int) -> int:
    """The largest size along ``axis`` of the kernel's ``ndim``-dimensional array arguments."""
    if frame is None:
        return 0
    code = frame.f_code
    sizes = [
        shape[axis]
        for name in code.co_varnames[: code.co_argcount]
        if (shape := getattr(frame.f_locals.get(name), "shape", None)) is not None
        and len(shape) == ndim
    ]
    return max(sizes, default=0)


def _label(names: list[str], is_global: bool) -> str:
    if len(names) == 1:
        return f"`{names[0]}`" + (", a kernel argument" if is_global else "")
    label = "one of `" + "`, `".join(names[:-1]) + f"` and `{names[-1]}`"
    return label + (", kernel arguments" if is_global else "")


#: What a kernel can use from ``cuda`` (the simulator's module lacks some at top level).
CUDA_NAMES = [
    "grid",
    "gridsize",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "laneid",
    "warpsize",
    "syncthreads",
    "syncthreads_count",
    "syncthreads_and",
    "syncthreads_or",
    "syncwarp",
    "shared",
    "local",
    "const",
    "atomic",
    "threadfence",
    "threadfence_block",
    "activemask",
    "ballot_sync",
    "all_sync",
    "any_sync",
    "eq_sync",
    "shfl_sync",
    "shfl_up_sync",
    "shfl_down_sync",
    "shfl_xor_sync",
    "match_any_sync",
    "match_all_sync",
    "popc",
    "brev",
    "clz",
    "ffs",
    "fma",
    "selp",
    "jit",
]


def _close_cuda_name(name: str) -> str:
    from numba import cuda

    known = sorted(set(CUDA_NAMES) | {n for n in dir(cuda) if not n.startswith("_")})
    match = difflib.get_close_matches(name, known, 1)
    return f" Did you mean `cuda.{match[0]}`?" if match else ""


def _global_ids(location, blockdim) -> set[int]:
    """The failing thread's global index along x, y and z (and flattened over the grid's x)."""
    if location is None or blockdim is None:
        return set()
    t, b = location
    dims = (tuple(blockdim) if isinstance(blockdim, (tuple, list)) else (blockdim,)) + (1, 1)
    return {b[axis] * int(dims[axis]) + t[axis] for axis in range(3)}


def _is_course_cuda(value) -> bool:
    """True for the ``cuda`` module a kernel sees in the course's simulator."""
    from ..sim.device import Module

    return isinstance(value, Module)


def _warp_error() -> type:
    from ..sim.warp import WarpError

    return WarpError


def explain(error: BaseException, function, blockdim=None) -> KernelError:
    """Explain ``error``, raised by a launch of ``function`` (the learner's Python function) in
    blocks of ``blockdim`` threads."""
    code = getattr(function, "__code__", None)
    entry = _learner_frame(error.__traceback__, code)
    line = entry.tb_lineno if entry is not None else None
    if line is None and isinstance(getattr(error, "line", None), int):
        line = error.line  # the course simulator's, for errors raised outside the kernel's code
    frame = entry.tb_frame if entry is not None else None
    filename = code.co_filename if code is not None else ""
    source = linecache.getline(filename, line).strip() if line else ""
    raw = str(error)
    cause = getattr(error, "cause", None)
    message = clean(cause if isinstance(cause, str) else raw)
    exc_type = type(error).__name__
    where = f"line {line}" + (f": `{source}`" if source else "") if line else ""
    location = _location(error, raw)
    thread = _thread(location)
    common = {"exc_type": exc_type, "line": line, "source": source}
    if location is not None:
        common.update(thread=location[0], block=location[1])

    bounds = _bounds(error, message)
    if bounds:
        index, axis, size = bounds
        names, is_global, ndim = _which_array(frame, source, axis, size)
        what = _label(names, is_global) if names else ""
        name = names[0] if len(names) == 1 else ""
        text = (
            f"{(thread or 'a thread')} used index {index} on axis {axis} of an array whose size "
            f"there is {size}" + (f" ({what})" if what else "") + f" at {where or 'one line'}"
            f" (valid indices are 0 to {size - 1})."
        )
        details = dict(array=name, is_global=is_global, index=index, axis=axis, size=size)
        extra = index >= max(size, _largest_argument(frame, axis, ndim))  # past every end
        if is_global and extra and index in _global_ids(location, blockdim):
            text += (
                " The grid has more threads than elements, so the extra threads must do nothing."
            )
            return KernelError("extra_threads", text, "", **common, **details)
        if index < 0:
            hint = (
                f"index {index} counts from the end in Python but is out of range here: check "
                "the arithmetic that computes it (e.g. `i - 1` for i = 0 needs its own case)."
            )
        elif name and not is_global:
            hint = (
                f"`{name}` has {size} elements along axis {axis}, fewer than the indices your "
                "threads use: make it as large as the block (or the tile) it holds, or keep the "
                "index below its size."
            )
        else:
            hint = (
                f"the index on {where or 'that line'} reaches {index}, past the end of an axis "
                f"of size {size}: check how it is computed, and that it stays below {size}."
            )
        return KernelError("out_of_bounds", text, hint, **common, **details)

    if isinstance(error, (IndexError, TypeError)) and (
        _FLOAT_INDEX in message or "'float' object cannot be interpreted as an integer" in message
    ):
        return KernelError(
            "float_index",
            f"Your kernel used a float where an integer is needed (an index, or a `range` bound; "
            f"{exc_type}) at {where or 'one line'}.",
            "an index must be an integer: in Python `/` always gives a float, even for "
            "`6 / 2`; use `//` for integer division (e.g. `n // 2`), or `int(...)`.",
            **common,
        )

    if isinstance(error, (NameError, AttributeError)):
        attribute = _NO_ATTRIBUTE.search(raw)
        undefined = _NOT_DEFINED.search(raw)
        missing = attribute.group(2) if attribute and "FakeCUDAModule" in attribute.group(1) else ""
        if not missing and _is_course_cuda(getattr(error, "obj", None)):
            missing = getattr(error, "name", None) or ""  # the course simulator's cuda module
        if missing:
            name = f"cuda.{missing}"
            close = _close_cuda_name(missing)
            text = f"`{name}` does not exist ({exc_type}) at {where or 'one line'}.{close}"
        elif undefined:
            name = undefined.group(1)
            text = f"The name `{name}` is not defined ({exc_type}) at {where or 'one line'}."
        else:
            name = attribute.group(2) if attribute else ""
            text = f"Your kernel raised {exc_type} at {where or 'one line'}: {message}"
        return KernelError(
            "name",
            text,
            f"a typo? Check the spelling of `{name}` on that line." if name else "a typo?",
            **common,
        )

    if type(error).__name__ == "WarpError" or isinstance(error, _warp_error()):
        return KernelError(
            "warp",
            f"A warp operation went wrong at {where or 'one line'}: {message}",
            "every lane named in a warp operation's mask must reach that same call: use the "
            "mask of the lanes that actually take part (e.g. from `cuda.activemask()` or "
            "`cuda.ballot_sync`), or move the call out of the `if` so that all lanes reach it.",
            **common,
        )

    text = f"Your kernel raised {exc_type}" + (f" at {where}" if where else "")
    text += f": {message}" if message else "."
    return KernelError(
        "other",
        text,
        f"fix the cause of this {exc_type}"
        + (f" on line {line}" if line else "")
        + ", then check again.",
        **common,
    )


def signature_problem(function, nargs: int, expected: list[str]) -> str | None:
    """A sentence when ``function`` cannot be called with ``nargs`` positional arguments."""
    import inspect

    try:
        inspect.signature(function).bind(*range(nargs))
    except TypeError:
        pass
    except ValueError:
        return None
    else:
        return None
    mine = ", ".join(inspect.signature(function).parameters)
    theirs = ", ".join(expected) if expected else f"{nargs} arguments"
    return f"Your kernel takes ({mine}), but this exercise launches it with ({theirs})."
