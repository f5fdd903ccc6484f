"""Compile a Triton kernel for a GPU without one, and read what the compiler made (chapter 12).

Triton's compiler is a library: it lowers a ``@triton.jit`` function to Triton IR (TTIR), then to
TritonGPU IR (TTGIR, where layouts, shared memory and tensor-core operations appear), LLVM IR and
PTX, and calls ``ptxas`` (shipped with Triton) for the binary. None of that touches a GPU, so a
laptop can compile for an A100 (``sm_80``) or an H100 (``sm_90``) and read every stage.

On the simulator ``TRITON_INTERPRET=1`` is set, and with it Triton's own library functions
(``tl.max``, ``tl.sum``...) are built for its interpreter; compiling therefore happens in a child
process that imports Triton without the interpreter, kept alive between calls (its first call
includes Triton's import, a second or two).

Usage::

    compiled = gu.triton_ir.compile(add_kernel, {"x_ptr": "*fp32", ..., "BLOCK_SIZE": 1024},
                                    target="sm_90")
    print(compiled.asm["ttgir"])
    compiled.count("ptx", r"ld\\.global\\.v4")   # vectorised 16-byte loads
    compiled.shared_bytes                        # shared memory one program needs
"""

from __future__ import annotations

import atexit
import linecache
import re
import threading
from dataclasses import dataclass, field

from .._child import start_child, stop_child
from ..pickling import dumps, python_function

__all__ = [
    "TARGETS",
    "CompileError",
    "Compiled",
    "check",
    "compile",
    "compile_like_launch",
    "shutdown",
    "signature_of",
]

#: Targets by name: (backend, compute capability, warp size).
TARGETS = {"sm_80": ("cuda", 80, 32), "sm_90": ("cuda", 90, 32)}
#: Seconds one compilation may take (the first includes Triton's import).
TIMEOUT = 120.0

_CHILD = r"""
import linecache, os, pickle, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupted notebook: the parent decides
os.environ["TRITON_INTERPRET"] = "0"
from multiprocessing.connection import Connection
requests = Connection(int(sys.argv[1]), writable=False)
results = Connection(int(sys.argv[2]), readable=False)
try:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction
    working = True
except Exception:
    working = False
def answer(payload, sources, signature, constexprs, target, options, keep, aligned=()):
    if not working:
        return ("unavailable", "Triton cannot be imported here", None)
    for filename, lines in sources.items():
        linecache.cache[filename] = (sum(map(len, lines)), None, list(lines), filename)
    try:
        function = pickle.loads(payload)
    except Exception as error:
        return ("unavailable", f"the kernel could not be sent ({type(error).__name__})", None)
    try:
        jit = JITFunction(function)
        attrs = {(jit.arg_names.index(name),): [["tt.divisibility", 16]] for name in aligned}
        source = ASTSource(fn=jit, signature=signature, constexprs=constexprs, attrs=attrs)
        kernel = triton.compile(source, target=GPUTarget(*target), options=options or None)
    except Exception as error:
        node = getattr(error, "node", None)
        return (type(error).__name__, str(getattr(error, "error_message", None) or error),
                getattr(node, "lineno", None))
    if not keep:
        return None
    asm = {k: v for k, v in kernel.asm.items() if isinstance(v, str)}
    meta = kernel.metadata
    return {"asm": asm, "shared": int(getattr(meta, "shared", 0) or 0),
            "num_warps": int(getattr(meta, "num_warps", 0) or 0),
            "num_stages": int(getattr(meta, "num_stages", 0) or 0)}
while True:
    try:
        results.send(answer(*requests.recv()))
    except (EOFError, OSError):
        break
"""

_child = None
_lock = threading.Lock()


class CompileError(Exception):
    """Triton's compiler rejected the kernel (``kind``, ``message``, ``line`` in the function)."""

    def __init__(self, kind: str, message: str, line: int | None):
        super().__init__(f"{kind}: {message}")
        self.kind, self.message, self.line = kind, message, line


@dataclass(frozen=True)
class Compiled:
    """What the compiler made for one target: each stage's text and a few facts."""

    target: str
    asm: dict = field(repr=False)
    shared_bytes: int
    num_warps: int
    num_stages: int

    def count(self, stage: str, pattern: str) -> int:
        """How many times ``pattern`` (a regular expression) occurs in a stage's text."""
        return len(re.findall(pattern, self.asm.get(stage, "")))

    def lines(self, stage: str, pattern: str, limit: int = 8) -> list[str]:
        """The first ``limit`` lines of a stage that contain ``pattern``."""
        found = [line for line in self.asm.get(stage, "").splitlines() if re.search(pattern, line)]
        return found[:limit]


def shutdown() -> None:
    """End the compiler's process."""
    global _child
    if _child is not None:
        child, _child = _child, None
        stop_child(child)


atexit.register(shutdown)


def _request(function, signature, constexprs, target, options, keep, aligned=()):
    global _child
    from ..exercises._triton import COMPILER_PROCESS, register_reducer

    register_reducer()  # a @triton.jit helper the kernel calls travels with its cell's text
    filename = function.__code__.co_filename
    sources = {filename: linecache.getlines(filename, function.__globals__)}
    payload = dumps(function)
    with _lock:
        if _child is None or _child[0].poll() is not None:
            shutdown()
            # a @triton.jit helper the kernel calls travels by the exercises' reducer, which
            # makes it a compiled JITFunction here only when told so (it carries its cell's text)
            _child = start_child(["-c", _CHILD], TRITON_INTERPRET="0", **{COMPILER_PROCESS: "1"})
        _, to_child, from_child = _child
        try:
            to_child.send(
                (payload, sources, signature, constexprs, target, options, keep, tuple(aligned))
            )
            if not from_child.poll(TIMEOUT):
                shutdown()
                return ("unavailable", f"no answer within {TIMEOUT:g} s", None)
            return from_child.recv()
        except (EOFError, OSError):
            shutdown()
            return ("unavailable", "the compiler's process stopped", None)


def _target(target) -> tuple:
    if isinstance(target, str):
        if target not in TARGETS:
            raise ValueError(f"unknown target {target!r}: use one of {', '.join(TARGETS)}")
        return TARGETS[target]
    return tuple(target)


def signature_of(function, args: list, constexprs: dict) -> tuple[dict, dict]:
    """Triton's signature for ``function`` called with ``args`` (tensors and numbers, in order)
    and then ``constexprs`` (by position after them)."""
    import inspect

    types = {
        "torch.float32": "*fp32",
        "torch.float16": "*fp16",
        "torch.bfloat16": "*bf16",
        "torch.int64": "*i64",
        "torch.int32": "*i32",
        "torch.int8": "*i8",
        "torch.uint8": "*u8",
    }
    names = list(inspect.signature(function).parameters)
    values = [*args, *constexprs.values()]
    signature, constants = {}, {}
    for index, (name, value) in enumerate(zip(names, values, strict=False)):
        if index >= len(args):
            signature[name], constants[name] = "constexpr", value
        elif hasattr(value, "data_ptr"):
            signature[name] = types.get(str(value.dtype), "*fp32")
        elif isinstance(value, bool):
            signature[name] = "i1"
        elif isinstance(value, int):
            signature[name] = "i32" if -(2**31) <= value < 2**31 else "i64"
        else:
            signature[name] = "fp32"
    return signature, constants


def check(function, signature: dict, constexprs: dict, target="sm_80"):
    """None when the kernel compiles for ``target``; ("unavailable", why, None) when the
    compiler cannot run here; else (exception type, message, line counted from the ``def``)."""
    return _request(function, signature, constexprs, _target(target), None, keep=False)


def compile(  # noqa: A001 - the verb is the point
    kernel,
    signature: dict,
    constexprs: dict | None = None,
    target="sm_90",
    *,
    num_warps: int = 4,
    num_stages: int = 3,
    aligned: tuple[str, ...] = (),
) -> Compiled:
    """Compile ``kernel`` (a ``@triton.jit`` function, autotuned or not) for ``target``
    ("sm_80", "sm_90" or a (backend, capability, warp size) tuple) without a GPU.
    ``signature`` maps each parameter to Triton's type ("*fp32" for a pointer to float32, "i32",
    "fp32", "constexpr");
    ``constexprs`` gives the constexpr values. ``aligned`` names the parameters known to be
    multiples of 16 (pointers to 16-byte-aligned memory, sizes and strides divisible by 16):
    Triton's launcher tells the compiler this about every argument it sees, and the compiler
    uses it to emit wide, vectorised memory accesses. Raises :class:`CompileError` when Triton
    refuses."""
    from ..exercises._triton import jit_function

    function = jit_function(kernel) or python_function(kernel) or kernel  # autotuned too
    signature = dict(signature)
    constexprs = dict(constexprs or {})
    for name in constexprs:
        signature[name] = "constexpr"
    import inspect

    order = list(inspect.signature(function).parameters)
    signature = {name: signature[name] for name in order if name in signature}
    options = {"num_warps": num_warps, "num_stages": num_stages}
    outcome = _request(
        function, signature, constexprs, _target(target), options, keep=True, aligned=aligned
    )
    if isinstance(outcome, tuple):
        raise CompileError(*outcome)
    name = target if isinstance(target, str) else f"sm_{target[1]}"
    return Compiled(
        name, outcome["asm"], outcome["shared"], outcome["num_warps"], outcome["num_stages"]
    )


def compile_like_launch(
    kernel,
    args: dict,
    constexprs: dict | None = None,
    target="sm_90",
    *,
    num_warps: int = 4,
    num_stages: int = 3,
) -> Compiled:
    """Compile as Triton's launcher would for a launch with these arguments: ``args`` maps each
    run-time parameter to a pointer type ("*fp32", "*bf16"...: memory from an allocator, which
    is at least 16-byte aligned) or a number. Like the launcher, an integer equal to 1 becomes a
    compile-time constant and one divisible by 16 is marked so (the compiler can then prove
    that rows start on 16-byte boundaries and use wide loads)."""
    signature, constants, aligned = {}, dict(constexprs or {}), []
    for name, value in args.items():
        if isinstance(value, str):
            signature[name] = value
            aligned.append(name)
        elif isinstance(value, bool):
            signature[name] = "i1"
        elif isinstance(value, int) and value == 1:
            constants[name] = 1
        elif isinstance(value, int):
            signature[name] = "i32" if -(2**31) <= value < 2**31 else "i64"
            if value % 16 == 0:
                aligned.append(name)
        else:
            signature[name] = "fp32"
    return compile(
        kernel,
        signature,
        constants,
        target,
        num_warps=num_warps,
        num_stages=num_stages,
        aligned=tuple(aligned),
    )
