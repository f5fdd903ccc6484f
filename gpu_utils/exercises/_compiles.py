"""Does a kernel that runs on the simulator also compile for a GPU? (chapters 02 and 03)

The simulator runs kernels as plain Python, so it accepts code that numba's CUDA compiler
rejects: an f-string, a dict, a list that grows. Like ``gu.ptx``, this compiles the kernel to PTX
with NVVM, which needs no GPU, in a child process that imports numba without the simulator. The
child stays alive between checks (a first numba import costs seconds); ``compile_problem`` is
called by the checker's own process once a kernel's results are correct on the simulator.
"""

from __future__ import annotations

import ast
import atexit
import inspect
import re
import subprocess
import textwrap
import threading
from multiprocessing.connection import Connection

from .._child import start_child, stop_child
from ..pickling import dumps

#: Seconds one compilation may take (the first includes numba's import).
TIMEOUT = 120.0

_CHILD = r"""
import pickle, sys
from multiprocessing.connection import Connection
requests = Connection(int(sys.argv[1]), writable=False)
results = Connection(int(sys.argv[2]), readable=False)
import os
os.environ["GPU_COURSE_MODE"] = "gpu"  # compile for a GPU: gpu_utils must not pick the simulator
import gpu_utils  # before numba: numba-cuda 0.30 under NumPy 2.5 (see gpu_utils.runtime)
import numba
from numba import cuda
def probe(out):
    out[0] = 1.0
try:  # without a working compiler here, every answer would look wrong: say so instead
    cuda.compile_ptx(probe, (numba.float32[::1],), cc=(8, 0))
    working = True
except Exception:
    working = False
def answer(payload, args):
    if not working:
        return "unavailable"
    try:
        function = pickle.loads(payload)
        types = tuple(numba.typeof(a) for a in args)
        cuda.compile_ptx(function, types, cc=(8, 0))
        return None
    except Exception as error:
        return (type(error).__name__, str(error))
while True:
    try:
        results.send(answer(*requests.recv()))
    except (EOFError, OSError):  # the checker's process has gone: so do we
        break
"""

_child: tuple[subprocess.Popen, Connection, Connection] | None = None
_lock = threading.Lock()


def warm_up() -> None:
    """Start the compiler's process now, so that its numba import overlaps the first check."""
    global _child
    with _lock:
        if _child is None:
            _child = _start()


def _start() -> tuple[subprocess.Popen, Connection, Connection]:
    return start_child(["-c", _CHILD])


def shutdown() -> None:
    """End the compiler's process."""
    global _child
    if _child is not None:
        child, _child = _child, None
        stop_child(child)


atexit.register(shutdown)


def _compile(function, args) -> tuple[str, str] | str | None:
    """None when it compiles, (exception type, message) when not, "unavailable" otherwise."""
    global _child
    with _lock:
        if _child is None or _child[0].poll() is not None:
            shutdown()
            _child = _start()
        _, to_child, from_child = _child
        try:
            to_child.send((dumps(function), tuple(args)))
            if not from_child.poll(TIMEOUT):
                shutdown()
                return "unavailable"
            return from_child.recv()
        except (EOFError, OSError):
            shutdown()
            return "unavailable"


_UNSUPPORTED = (
    (ast.JoinedStr, "an f-string", "print values with commas instead: `print('i =', i)`."),
    (ast.Dict, "a dict", "use arrays: `cuda.local.array(n, float32)` or a kernel argument."),
    (ast.Set, "a set", "use arrays: `cuda.local.array(n, float32)` or a kernel argument."),
    (ast.ListComp, "a list comprehension", "use a loop that writes into an array."),
    (ast.Try, "try/except", "check the condition with `if` instead of catching an exception."),
    (ast.With, "a `with` block", "GPU code has no context managers: write the steps out."),
)


def _likely_cause(function) -> tuple[str, int | None, str]:
    """(what, line, how to fix) for a construct numba's CUDA target cannot compile, if the
    source has one."""
    try:
        lines, first = inspect.getsourcelines(function)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return "", None, ""
    for node in ast.walk(tree):
        for kind, what, fix in _UNSUPPORTED:
            if isinstance(node, kind):
                return what, node.lineno + first - 1, fix
    return "", None, ""


def _reported_line(message: str, function) -> int | None:
    filename = re.escape(function.__code__.co_filename)
    found = re.findall(rf'{filename}["\)]?,? (?:line )?\(?(\d+)\)?', message)
    return int(found[-1]) if found else None


def compile_problem(function, args) -> tuple[str, str] | None:
    """(what, hint) when ``function`` does not compile for a GPU with these arguments' types;
    None when it does, or when the compiler cannot be run here (the check then relies on the
    simulator alone)."""
    outcome = _compile(function, args)
    if outcome is None or outcome == "unavailable":
        return None
    exc_type, message = outcome
    if exc_type in ("PicklingError", "ModuleNotFoundError", "AttributeError") and not (
        "Typing" in message or "Lowering" in message
    ):
        return None  # the child could not rebuild the function: not the learner's code
    what, line, fix = _likely_cause(function)
    line = line or _reported_line(message, function)
    filename = function.__code__.co_filename
    source = ""
    if line:
        import linecache

        source = linecache.getline(filename, line).strip()
    where = f" (line {line}: `{source}`)" if source else f" (line {line})" if line else ""
    first = (message.strip().splitlines() or [""])[0].strip()
    base = (
        "Your kernel gives the right results on the simulator, but it does not compile for a "
        "GPU: the simulator runs it as ordinary Python, while on a GPU numba compiles it and "
        "supports only part of Python"
    )
    if what:
        return f"{base}, and not {what}{where}.", fix
    if re.search(r"(shared|local)\.array", message) and re.search(r"array\(\(?[^)]*int64", message):
        return (
            f"{base}{where}: the shape of a shared or local array must be known when the kernel "
            "is compiled.",
            "a shared (or local) array's shape must be a number or a global constant, not an "
            "expression such as `TILE + 1`: define `PADDED = TILE + 1` at module level (outside "
            "the kernel) and write `cuda.shared.array((TILE, PADDED), float32)`.",
        )
    return (
        f"{base}{where}. The compiler said: {exc_type}: {first}",
        "use only numbers, arrays (kernel arguments, cuda.local.array, cuda.shared.array), "
        "`math` functions and cuda's own functions inside a kernel.",
    )
