"""Pick the execution mode once, before numba is imported (chapter 00, "How the course runs").

The course runs every kernel either on a real NVIDIA GPU (``"gpu"``) or on a CUDA simulator
(``"simulator"``) on the CPU: the course's own (:mod:`gpu_utils.sim`), behind Numba's simulator
mode (``GPU_COURSE_SIM=numba`` keeps numba-cuda's, Python threads). Numba reads
``NUMBA_ENABLE_CUDASIM`` once, when it is first imported, so this module decides the mode and sets
that variable *before* anything imports numba. The CUDA driver is probed through ``ctypes``, without
numba. ``GPU_COURSE_MODE=simulator|gpu`` overrides the choice.

In simulator mode it also sets ``TRITON_INTERPRET=1`` (chapter 12): Triton then runs
``@triton.jit`` kernels in its interpreter, on the CPU, with torch tensors. Triton reads the
variable when a kernel is decorated, so it must be set before a notebook defines one; setting it
here, at ``import gpu_utils``, covers every notebook that imports the package first. In GPU mode
it removes the variable (as it removes ``NUMBA_ENABLE_CUDASIM``), so that a process started from a
simulator session does not run the interpreter on a GPU; to debug a kernel in the interpreter on a
GPU machine, set ``os.environ["TRITON_INTERPRET"] = "1"`` after ``import gpu_utils`` and before
the kernel's ``@triton.jit``.

NumPy 2.5 removed ``numpy.row_stack``, but numba-cuda 0.30 (the newest release; the project is in
maintenance mode and declined the one-line fix, NVIDIA/numba-cuda#907) registers a GPU version of
it when it compiles its first kernel, so under NumPy 2.5 every compiled kernel fails with
"module 'numpy' has no attribute 'row_stack'". The course pins ``numpy<2.5``, but a learner can get
2.5 anyway (Colab's image, ``pip install -e .`` into an existing environment). So, just before numba
is first imported, :func:`add_row_stack_stub` gives numpy that one name when numpy lacks it and
numba-cuda is 0.30 or older: a stub that raises, saying to use ``numpy.vstack``; it is never
numpy's real function, and nothing is added when numpy still has it.

Triton 3.6's interpreter (the CUDA 12 lock's and Colab's Triton) turns a one-element block into an
index with ``int()`` of a one-dimensional array, which NumPy 2.4 refuses; a second import hook
gives it Triton 3.7's ``squeeze()`` once its interpreter loads (:func:`patch_triton_index`).

The same hook guards every launch in the interpreter (:func:`patch_triton_launch`): an access
outside the launch's tensors raises :class:`LaunchOutOfBounds` instead of crashing the process.

At import this module depends on nothing else in the package (the guard imports the checkers'
engine when a kernel is launched; the banner lives in :mod:`gpu_utils.device`,
and the package's ``__init__`` sets up the simulator's warp intrinsics once the mode is known).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import re
import sys
import warnings
from typing import TypeVar

from .driver import probe as probe_driver  # the course's one driver probe (gpu_utils/driver.py)

MODES = ("gpu", "simulator")
T = TypeVar("T")


def _choose_mode() -> tuple[str, str]:
    """Return (mode, why)."""
    forced = os.environ.get("GPU_COURSE_MODE", "").strip().lower()
    if forced:
        if forced not in MODES:
            raise ValueError(
                f"GPU_COURSE_MODE={forced!r} is not a mode: use 'gpu' or 'simulator', "
                "or unset it to let the course choose."
            )
        return forced, f"GPU_COURSE_MODE={forced}"
    count, reason = probe_driver()
    if count:
        return "gpu", f"the CUDA driver reports {count} GPU(s)"
    return "simulator", reason or "no GPU"


def _numba_conflict(mode: str) -> str | None:
    """If numba was imported before gpu_utils in the other mode, explain how to fix it."""
    numba_config = sys.modules.get("numba.core.config")
    if numba_config is None:
        return None
    simulating = bool(getattr(numba_config, "ENABLE_CUDASIM", 0))
    if simulating == (mode == "simulator"):
        return None
    actual = "simulator" if simulating else "GPU"
    return (
        f"numba was imported before gpu_utils, in {actual} mode, but this machine needs {mode} mode; "
        "numba cannot switch afterwards. Fix: restart the kernel (Kernel > Restart) and make "
        "`import gpu_utils as gu` the first import of the notebook."
    )


def _settle() -> tuple[str, str, str | None]:
    wanted, why = _choose_mode()
    conflict = _numba_conflict(wanted)
    if conflict:
        warnings.warn(conflict, RuntimeWarning, stacklevel=3)
        numba_config = sys.modules["numba.core.config"]
        actual = "simulator" if getattr(numba_config, "ENABLE_CUDASIM", 0) else "gpu"
    else:
        actual = wanted
        if actual == "simulator":
            os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        else:
            os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    if actual == "simulator":
        os.environ["TRITON_INTERPRET"] = "1"  # Triton's interpreter: no GPU needed (chapter 12)
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    return actual, why, conflict


mode, mode_reason, mode_conflict = _settle()


def _release(package: str) -> tuple[int, int] | None:
    """(major, minor) of an installed package, from its metadata (nothing is imported)."""
    from importlib import metadata  # here, not at import: it costs ~25 ms of `import gpu_utils`

    try:
        found = re.match(r"(\d+)\.(\d+)", metadata.version(package))
    except metadata.PackageNotFoundError:
        return None
    return (int(found.group(1)), int(found.group(2))) if found else None


#: The newest numba-cuda that registers ``numpy.row_stack`` unguarded (NVIDIA/numba-cuda#907).
ROW_STACK_NUMBA_CUDA = (0, 30)
#: Set when :func:`add_row_stack_stub` gave numpy the stub (the doctor reports it).
row_stack_stub = False


def _row_stack_stub(*args, **kwargs):
    """Not NumPy's ``row_stack``: NumPy 2.5 removed it. Use ``numpy.vstack``, which it was an alias
    of. (gpu_utils defines this name only so that numba-cuda 0.30 can compile kernels.)"""
    raise AttributeError(
        "numpy.row_stack was removed in NumPy 2.5: use numpy.vstack, which it was an alias of. "
        "(The course defines the name only so that numba-cuda 0.30 can compile kernels.)"
    )


_row_stack_stub.__name__ = "row_stack"
_row_stack_stub.gpu_course_stub = True  # type: ignore[attr-defined]


def add_row_stack_stub() -> bool:
    """Give numpy a ``row_stack`` stub when numpy lacks it and numba-cuda <= 0.30 needs the name.

    Returns True when the stub is (now) in place. Nothing changes with NumPy < 2.5 (which has the
    real function), without numba-cuda, or with a numba-cuda newer than 0.30."""
    global row_stack_stub
    numba_cuda = _release("numba-cuda")
    if numba_cuda is None or numba_cuda > ROW_STACK_NUMBA_CUDA:
        return False
    import numpy

    current = getattr(numpy, "row_stack", None)
    if current is not None:
        return getattr(current, "gpu_course_stub", False)
    numpy.row_stack = _row_stack_stub
    row_stack_stub = True
    return True


class _BeforeNumba:
    """An import hook that adds the ``row_stack`` stub just before numba is first imported (so that
    ``import gpu_utils`` itself imports neither numpy nor numba), then removes itself."""

    def find_spec(self, name, path=None, target=None):
        if name == "numba":
            _remove_hook()
            try:
                add_row_stack_stub()
            except Exception as error:  # never break an import: the doctor will name the problem
                warnings.warn(f"gpu_utils could not add numpy.row_stack: {error}", stacklevel=2)
        return None


def _remove_hook() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _BeforeNumba)]


def _install_hook() -> None:
    if "numba" in sys.modules:  # imported before gpu_utils: add the stub now
        add_row_stack_stub()
    elif not any(isinstance(f, _BeforeNumba) for f in sys.meta_path):
        sys.meta_path.insert(0, _BeforeNumba())


_install_hook()

#: The first Triton whose interpreter squeezes a one-element block before ``int()`` (3.6 does not).
TRITON_INDEX_FIXED = (3, 7)
_TRITON_INTERPRETER = "triton.runtime.interpreter"


def patch_triton_index(interpreter) -> bool:
    """Make Triton 3.6's interpreter turn a one-element block into an index as 3.7 does.

    Triton 3.6's interpreter gives its tensors ``__index__ = int(self.handle.data)``; NumPy 2.4
    refuses ``int()`` of an array with a dimension ("only 0-dimensional arrays can be converted to
    Python scalars") and NumPy 2.1-2.3 warn, so chapter 12 stops under the CUDA 12 lock (triton
    3.6.0, numpy 2.4). Triton 3.7 calls ``int(self.handle.data.squeeze())``; this applies the same
    line, only where Triton is older than 3.7. Returns True when it patched."""
    release = _release("triton")
    if release is None or release >= TRITON_INDEX_FIXED:
        return False
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "gpu_course_patched", False):
        return False

    def _patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    _patch_lang_tensor.gpu_course_patched = True
    interpreter._patch_lang_tensor = _patch_lang_tensor
    return True


class AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An import hook that calls ``then(module)`` right after the module ``name`` has loaded (the
    module itself is not imported early), then removes itself. Used for Triton's interpreter
    here and for numba's simulator in :mod:`gpu_utils.sim.warp`."""

    def __init__(self, name: str, then) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self.then(module)

    @classmethod
    def install(cls, name: str, then) -> None:
        """Call ``then`` now if ``name`` is loaded, else as soon as it is (one hook per name)."""
        if name in sys.modules:
            then(sys.modules[name])
        elif not any(isinstance(f, cls) and f.name == name for f in sys.meta_path):
            sys.meta_path.insert(0, cls(name, then))


class LaunchOutOfBounds(IndexError):
    """A direct launch in Triton's interpreter that loaded or stored outside its tensors."""


def _guard_active(interpreter) -> bool:
    """True while a checker's ``guarded`` block already checks this launch's accesses."""
    return "create_masked_load" in vars(interpreter.interpreter_builder)


def _bfloat16_names(names, values) -> list[str]:
    return [
        n
        for n, v in zip(names, values, strict=True)
        if str(getattr(v, "dtype", "")) == "torch.bfloat16"
    ]


def patch_triton_launch(interpreter) -> bool:
    """Check every launch in Triton's interpreter as the checkers' ``check()`` does.

    Triton's interpreter turns each load and store into a numpy access at the address the
    pointers hold, unchecked: an unmasked load past a tensor's end reads this process's memory,
    and crashed the notebook's kernel in 3 of 3 runs of 20 launches (issue 27). Here every
    ``kernel[grid](...)`` runs inside :func:`gpu_utils.exercises._triton.guarded`, which checks
    each ``tl.load``/``tl.store``/atomic against the launch's tensors before it happens, and an
    access outside them raises :class:`LaunchOutOfBounds` naming the tensor, the offsets, the
    program and the kernel's line. Launches inside a checker (already guarded) run as they are.
    A launch with bfloat16 tensors warns: the interpreter's ``tl.dot`` does not support them
    (triton-lang/triton#11584). Returns True when it patched."""
    executor = getattr(interpreter, "InterpretedFunction", None)
    original = getattr(executor, "run", None)
    if original is None or getattr(original, "gpu_course_patched", False):
        return False
    import inspect

    def run(self, *args, grid, warmup, **kwargs):
        __tracebackhide__ = True  # IPython leaves this frame out of a learner's traceback
        if warmup or _guard_active(interpreter):
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        from gpu_utils.exercises._triton import OutOfBounds, guarded

        parameters = inspect.signature(self.fn).parameters
        named = {k: v for k, v in kwargs.items() if k in parameters}
        try:
            bound = inspect.signature(self.fn).bind_partial(*args, **named).arguments
        except TypeError:  # a wrong call: Triton's own message says what is missing
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        bf16 = _bfloat16_names(list(bound), list(bound.values()))
        if bf16:
            warnings.warn(
                f"`{'`, `'.join(bf16)}` {'is' if len(bf16) == 1 else 'are'} bfloat16: Triton's "
                "interpreter does not support bfloat16 in tl.dot (triton-lang/triton#11584), so "
                "a kernel that multiplies them gives wrong numbers here; use float16 or float32 "
                "in simulator mode.",
                stacklevel=3,
            )
        error = None
        try:
            with guarded(dict(bound), list(bound), self.fn):
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        except Exception as raised:
            cause = raised
            while not isinstance(cause, OutOfBounds) and cause.__cause__ is not None:
                cause = cause.__cause__
            if not isinstance(cause, OutOfBounds):
                raise
            error = cause
        raise LaunchOutOfBounds(
            error.text.replace("The checker stopped", "The course stopped")
            + "\nGive the access a mask, e.g. `mask=offsets < n`, and launch again."
        ) from None

    run.gpu_course_patched = True
    run.__wrapped__ = original
    executor.run = run
    return True


def _adapt_triton(module) -> None:
    try:
        patch_triton_index(module)
        patch_triton_launch(module)
    except Exception as error:  # never break an import
        warnings.warn(f"gpu_utils could not adapt Triton's interpreter: {error}", stacklevel=2)


AfterImport.install(_TRITON_INTERPRETER, _adapt_triton)


def pick(*, gpu: T, simulator: T) -> T:
    """Return ``gpu`` on a real GPU and ``simulator`` on the simulator (problem sizes, repeats)."""
    return gpu if mode == "gpu" else simulator
