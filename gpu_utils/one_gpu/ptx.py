"""Compile a kernel to PTX and count the registers ptxas gives it, with or without a GPU (chapter 02).

Numba compiles a Python kernel with NVVM (the CUDA compiler's LLVM-based front end) to PTX, a
virtual instruction set with unlimited virtual registers; ptxas then turns PTX into machine code
(SASS) for one architecture and allocates the real registers. Neither step needs a GPU: NVVM and
nvJitLink (which contains ptxas) ship as Python wheels. They do need numba in GPU mode, which a
process running the simulator cannot switch to, so the work happens in a child process that
imports numba directly, with ``NUMBA_ENABLE_CUDASIM`` removed from its environment.

On a GPU the driver compiles the same PTX with its own ptxas, whose version may differ from
nvJitLink's, so its register count (``kernel.compile(signature).regs_per_thread``) can differ
slightly.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..pickling import dumps, python_function

__all__ = ["CompiledKernel", "compile_kernel"]

#: Seconds the child process may take (a first numba import plus NVVM and ptxas).
TIMEOUT = 120

# Runs in the child: stdin carries (function, signature, cc); stdout gets one JSON object.
_CHILD = r"""
import json, pickle, sys
function, signature, cc = pickle.loads(sys.stdin.buffer.read())
import os
os.environ["GPU_COURSE_MODE"] = "gpu"  # compile for a GPU: gpu_utils must not pick the simulator
import gpu_utils  # before numba: numba-cuda 0.30 under NumPy 2.5 (see gpu_utils.runtime)
from numba import cuda
ptx, _ = cuda.compile_ptx(function, signature, cc=cc)
log, error = "", None
try:
    from cuda.bindings import nvjitlink
    handle = nvjitlink.create(2, [f"-arch=sm_{cc[0]}{cc[1]}", "-verbose"])
    try:
        data = ptx.encode()
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "kernel")
        nvjitlink.complete(handle)
        buffer = bytearray(nvjitlink.get_info_log_size(handle))
        nvjitlink.get_info_log(handle, buffer)
        log = buffer.decode(errors="replace").rstrip("\x00")
    finally:
        nvjitlink.destroy(handle)
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"
json.dump({"ptx": ptx, "log": log, "error": error}, sys.stdout)
"""


@dataclass(frozen=True)
class CompiledKernel:
    """A kernel's PTX and what ptxas made of it for one compute capability."""

    name: str
    compute_capability: tuple[int, int]
    ptx: str  # with numba's long mangled names replaced by the kernel's name
    declared_registers: Mapping[str, int] = field(repr=False)  # '%r (.b32)' -> names declared
    registers: int | None  # 32-bit registers per thread after ptxas; None if ptxas was unavailable
    spill_bytes: int | None  # bytes spilled to local memory (stores + loads), from ptxas
    ptxas_log: str = field(repr=False)
    note: str = ""

    def __str__(self) -> str:
        cc = f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"
        if self.registers is None:
            return f"{self.name} for {cc}: ptxas unavailable ({self.note})"
        return (
            f"{self.name} for {cc}: {self.registers} registers per thread after ptxas, "
            f"{self.spill_bytes} bytes spilled"
        )

    __repr__ = __str__

    @property
    def instructions(self) -> list[str]:
        """The body's instructions, one per line, without declarations, labels or comments."""
        body = self.ptx.split("{", 1)[-1]
        lines = (line.strip() for line in body.splitlines())
        return [line for line in lines if line and not line.startswith((".reg", "//", "}", "$"))]


def _shorten(ptx: str, name: str) -> str:
    entry = re.search(r"\.entry\s+(\S+?)\(", ptx)
    if entry:
        ptx = ptx.replace(entry.group(1), name)
    return re.sub(r"_ZN08NumbaEnv\S+?(?=;|\s|$)", f"NumbaEnv_{name}", ptx)


def _declared(ptx: str) -> dict[str, int]:
    found = re.findall(r"\.reg\s+\.(\w+)\s+%(\w+)<(\d+)>;", ptx)
    return {f"%{prefix} (.{kind})": int(count) for kind, prefix, count in found}


def _ptxas_figures(log: str) -> tuple[int | None, int | None]:
    registers = re.search(r"Used (\d+) registers", log)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    return (
        int(registers.group(1)) if registers else None,
        int(spills.group(1)) + int(spills.group(2)) if spills else None,
    )


def _python_function(kernel: object):
    function = python_function(kernel) or (kernel if callable(kernel) else None)
    if function is None:
        raise ValueError(
            "compile_kernel needs a kernel (a function decorated with @cuda.jit) or a plain "
            f"Python function, not {type(kernel).__name__}."
        )
    return function


def compile_kernel(
    kernel: object, signature: str, compute_capability: tuple[int, int] = (9, 0)
) -> CompiledKernel:
    """Compile ``kernel`` for ``signature`` (e.g. ``"void(float32[::1], float32[::1])"``).

    Works in either mode and without a GPU. Raises ValueError, with numba's message, when the
    kernel does not compile for that signature.
    """
    function = _python_function(kernel)
    cc = (int(compute_capability[0]), int(compute_capability[1]))
    payload = dumps((function, signature, cc))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=payload,
        capture_output=True,
        env=env,
        timeout=TIMEOUT,
    )
    if child.returncode != 0:
        lines = child.stderr.decode(errors="replace").strip().splitlines()
        reason = lines[-1] if lines else f"exit code {child.returncode}"
        if "compute capability" in reason:
            hint = "the CUDA compiler installed here cannot target it; use e.g. (8, 0) or (9, 0)"
        else:
            hint = (
                "check that the signature lists one type per argument, e.g. "
                "'void(float32, float32[::1])', and that the kernel runs on the simulator"
            )
        raise ValueError(
            f"{function.__name__} did not compile for {signature!r}: {reason}. Fix: {hint}."
        )
    result = json.loads(child.stdout)
    registers, spills = _ptxas_figures(result["log"])
    note = ""
    if registers is None:
        note = result["error"] or "ptxas printed no register count"
    return CompiledKernel(
        name=function.__name__,
        compute_capability=cc,
        ptx=_shorten(result["ptx"], function.__name__),
        declared_registers=MappingProxyType(_declared(result["ptx"])),
        registers=registers,
        spill_bytes=spills,
        ptxas_log=result["log"],
        note=note,
    )
