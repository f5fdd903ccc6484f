"""Which array libraries can use the GPU here (chapter 01 compares NumPy, CuPy and PyTorch).

``import cupy`` succeeds without a GPU and fails only at the first allocation, so CuPy counts as
usable only after a guarded device count and a tiny computation succeed. Notebooks call
``array_module()`` and fall back to NumPy where NumPy teaches the same thing.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType

import numpy as np


@cache
def cupy_problem() -> str | None:
    """None when CuPy can compute on a GPU here, else why not (in words)."""
    try:
        import cupy
    except Exception as error:  # not installed, or a broken install
        return f"CuPy is not importable ({type(error).__name__}: {error})"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "CuPy sees no GPU"
        probe = cupy.arange(4, dtype=cupy.float32)
        if float((probe * 2).sum()) != 12.0:
            return "CuPy computed a wrong result in its smoke test"
    except Exception as error:
        first_line = (str(error).splitlines() or [""])[0]
        return f"CuPy cannot use a GPU here ({type(error).__name__}: {first_line})"
    return None


def cupy_usable() -> bool:
    """True when CuPy passed its smoke test on a GPU."""
    return cupy_problem() is None


def array_module() -> ModuleType:
    """CuPy when it works on a GPU here, else NumPy (same API for what the course uses)."""
    if cupy_usable():
        import cupy

        return cupy
    return np


@cache
def torch_device() -> str:
    """``"cuda"`` when PyTorch sees a GPU, else ``"cpu"``."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"
