"""Send a learner's function or kernel to another Python process (course machinery).

The exercise checker, ``gu.dist`` and ``gu.ptx`` all run learners' code in a fresh
interpreter. Functions defined in a notebook, a test file or a script cannot be imported there by
name, so :func:`dumps` sends them, and everything they use from their own module, by value with
cloudpickle; installed packages still travel by reference.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import cloudpickle

_BY_REFERENCE = ("gpu_utils", "torch", "numpy", "numba", "cloudpickle")


def python_function(kernel: object, *, plain: bool = False) -> Callable | None:
    """The Python function behind a CUDA kernel (GPU dispatcher or simulator kernel), or None.

    With ``plain=True`` a plain Python function is accepted too and returned as it is. The one
    definition for the course: the checker, ``gu.ptx`` and ``gu.trace`` all use it (a caller
    that needs a function raises its own error on None).
    """
    for attribute in ("py_func", "fn"):
        function = getattr(kernel, attribute, None)
        if callable(function) and hasattr(function, "__code__"):
            return function
    if plain and callable(kernel) and hasattr(kernel, "__code__"):
        return kernel
    return None


def _by_value(module_name: str | None) -> bool:
    """True for modules another process cannot import by name: test files, scripts, notebooks'
    helper modules. (``__main__`` is always sent by value by cloudpickle itself.)"""
    module = sys.modules.get(module_name or "")
    if module is None or module_name == "__main__" or module_name in sys.builtin_module_names:
        return False
    if module_name.split(".")[0] in _BY_REFERENCE:
        return False
    path = getattr(module, "__file__", None) or ""
    return not (
        "site-packages" in path or "dist-packages" in path or path.startswith(sys.base_prefix)
    )


def dumps(obj: object) -> bytes:
    """Serialise ``obj`` (or a tuple of functions and arguments) for another process."""
    parts = obj if isinstance(obj, tuple) else (obj,)
    names = {getattr(p, "__module__", None) for p in parts if callable(p)}
    modules = [sys.modules[n] for n in names if _by_value(n)]
    for module in modules:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(obj)
    finally:
        for module in modules:
            cloudpickle.unregister_pickle_by_value(module)
