"""The engine of the course's simulator (:mod:`gpu_utils.sim`): one launch, block by block.

A block whose kernel reaches no barrier runs each thread as a plain call. Otherwise each thread
is a generator (see :mod:`gpu_utils.sim.rewrite`); a phase resumes every runnable thread until
it yields at a barrier or finishes, then the engine releases what may go on:

* a ``syncwarp(mask)`` once every lane of its warp named in ``mask`` waits at a ``syncwarp``
  (lanes that do not exist take no part, as in ``gu.warp``);
* else a ``syncthreads`` (or ``_count/_and/_or``) once every thread still running waits at it.
  A thread that has left the kernel counts as arrived when it left through a ``return`` on a line
  before the barrier (PTX ISA, ``exit``: the ``if i >= n: return`` guard); one that skipped the
  barrier and ran on past it, or threads waiting at different barriers, are what the CUDA C++
  Programming Guide forbids ("Synchronization Functions": a barrier in conditional code only if
  the condition is the same across the block), where a GPU hangs or computes garbage: an error.

A launch of many threads is first tried in lockstep (:mod:`gpu_utils.sim.lockstep`), which
either ends exactly as the loops below would or restores the arguments and leaves the launch to
them.

A block that runs longer than ``loop_limit`` seconds is stopped (a watchdog thread raises in
the engine's thread) and reported with the line it was on.

An ``observer`` (:class:`gpu_utils.sim.observe.Observer`, None by default) sees every access to a
global or shared array and every barrier a thread passes: ``gu.trace`` and its race check run on
it. Without one nothing is wrapped and the loops below are the same.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import threading
import time
import types
from itertools import product

import numpy as np

from . import lockstep, rewrite
from . import warp_rendezvous as warps
from .device import Dim3, Module
from .errors import BarrierDivergence, KernelLoops, SimulatorError
from .rewrite import (
    SITES,
    SYNC,
    SYNC_AND,
    SYNC_COUNT,
    SYNC_OR,
    SYNCWARP,
    IndexOutOfBounds,
    NotHandledYet,
    check_index,
)

#: Seconds one block may run before the engine calls it an endless loop (within the 20 s the
#: course promises a learner).
LOOP_LIMIT_S = 15.0


class _Stop(BaseException):
    """Raised in the engine's thread by the watchdog."""


# --- compiling a kernel and the device functions it calls --------------------------------------

_COMPILED: dict = {}


def _cuda_module():
    from numba import cuda

    return cuda


def _device_function(value):
    """The Python function of a numba kernel or device function, or a plain function of a module
    that uses ``cuda`` (numba's simulator runs such a helper with the kernel's fake ``cuda``
    too), else None."""
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    if isinstance(value, FakeCUDAKernel):
        return value.fn
    if isinstance(value, types.FunctionType):
        cuda = _cuda_module()
        if any(v is cuda for v in value.__globals__.values()):
            return value
    return None


class _Linker:
    """Builds, for one launch, the rewritten kernel and device functions with their globals."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.cuda = _cuda_module()
        self.globals: dict[int, dict] = {}
        self.built: dict = {}
        self.reaches: dict = {}
        self.uses_grid1 = False

    def _namespace(self, function) -> dict:
        names = dict(function.__globals__)
        if function.__closure__:
            for var, cell in zip(function.__code__.co_freevars, function.__closure__, strict=True):
                with contextlib.suppress(ValueError):  # an empty cell
                    names[var] = cell.cell_contents
        return names

    def _cuda_names(self, function) -> frozenset[str]:
        return frozenset(k for k, v in self._namespace(function).items() if v is self.cuda)

    def reaches_barrier(self, function, stack=()) -> bool:
        if function in self.reaches:
            return self.reaches[function]
        if function in stack:
            return False
        analysis = rewrite.analyse(function, self._cuda_names(function))
        namespace = self._namespace(function)
        result = analysis.barrier_direct or any(
            (inner := _device_function(namespace.get(name))) is not None
            and self.reaches_barrier(inner, (*stack, function))
            for name in analysis.called_names
        )
        self.reaches[function] = result
        return result

    def build(self, function, is_kernel: bool):
        key = (function, is_kernel)
        if key in self.built:
            return self.built[key]
        cuda_names = self._cuda_names(function)
        analysis = rewrite.analyse(function, cuda_names)
        namespace = self._namespace(function)
        devices = {
            name: inner
            for name in analysis.called_names
            if (inner := _device_function(namespace.get(name))) is not None
        }
        yielding = {name for name, inner in devices.items() if self.reaches_barrier(inner)}
        generator = self.reaches_barrier(function)
        code = function.__code__
        constants = frozenset(  # global or closure ints >= 0 (TILE): no index check needed
            name
            for name in (*code.co_names, *code.co_freevars)
            if type(namespace.get(name)) is int and namespace[name] >= 0
        )
        cache_key = (code, is_kernel, frozenset(yielding), cuda_names, constants)
        compiled = _COMPILED.get(cache_key)
        if compiled is None:
            compiled = _COMPILED[cache_key] = rewrite.compile_function(
                function,
                analysis,
                cuda_names,
                yielding,
                is_kernel=is_kernel,
                generator=generator,
                constants=constants,
            )
        code, uses_grid1 = compiled
        self.uses_grid1 |= uses_grid1
        glob_key = id(function.__globals__)
        glob = self.globals.get(glob_key)
        if glob is None:
            glob = self.globals[glob_key] = dict(function.__globals__)
            for name in cuda_names & set(glob):
                glob[name] = self.module
            scalars = _numba_scalar_types()
            for name, value in list(glob.items()):
                if isinstance(value, scalars):
                    glob[name] = _numpy_scalar(value)
            glob["_sim_check_index"] = check_index
        closure = None
        if function.__closure__:
            cells = []
            for cell in function.__closure__:
                try:
                    value = cell.cell_contents
                except ValueError:
                    cells.append(cell)
                    continue
                value = self.module if value is self.cuda else _numpy_scalar(value)
                cells.append(types.CellType(value))
            closure = tuple(cells)
        built = types.FunctionType(code, glob, code.co_name, function.__defaults__, closure)
        self.built[key] = built
        # device functions reached from here, bound by name in its globals or closure
        for name, inner in devices.items():
            target = self.build(inner, False)
            if name in glob and _device_function(glob[name]) is inner:
                glob[name] = target
        if closure:
            for var, cell in zip(function.__code__.co_freevars, closure, strict=True):
                try:
                    inner = _device_function(cell.cell_contents)
                except ValueError:
                    continue
                if inner is not None and var in devices:
                    cell.cell_contents = self.build(inner, False)
        return built


def _numpy_scalar(value):
    """numba's scalar types (``float32``, ``int32``...) as numpy's: calling one is what numba's
    ``cast_python_value`` does (``getattr(np, name)(value)``) at a hundredth of the cost, and
    either is a dtype for ``cuda.shared.array``."""
    if isinstance(value, _numba_scalar_types()):
        return getattr(np, value.name, value)
    return value


def _numba_scalar_types() -> tuple[type, ...]:
    from numba.core import types as numba_types

    return (numba_types.Integer, numba_types.Float)


# --- arguments ---------------------------------------------------------------------------------


def _argument(value):
    """What a kernel gets for one argument: numpy arrays as they are, device arrays' data."""
    from numba.cuda.simulator.args import ArgHint
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    if isinstance(value, ArgHint):  # cuda.In / cuda.Out / cuda.InOut
        value = value.value
    if isinstance(value, FakeCUDAArray):
        return value._ary
    inner = getattr(value, "_item", None)  # FakeWithinKernelCUDAArray
    if inner is not None and isinstance(inner, FakeCUDAArray):
        return inner._ary
    return value


def _dims(value, what: str) -> tuple[int, int, int]:
    if isinstance(value, (int, np.integer)):
        dims = (int(value),)
    else:
        try:
            if isinstance(value, str):
                raise TypeError
            dims = tuple(int(v) for v in value)
        except (TypeError, ValueError):
            raise TypeError(
                f"{what} must be an int or a tuple of 1-3 ints, like 256 or (16, 16); got {value!r}"
            ) from None
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise ValueError(f"{what} must be 1-3 positive ints, like 256 or (16, 16); got {value!r}")
    return (*dims, 1, 1)[:3]


# --- the watchdog ------------------------------------------------------------------------------


class _Watchdog:
    """Raises :class:`_Stop` in the engine's thread when a block runs past the limit."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.thread_id = threading.get_ident()
        self.lock = threading.Lock()
        self.deadline = time.monotonic() + limit
        self.active = True
        self.fired = False
        self.wake = threading.Event()
        self.timer = threading.Thread(target=self._watch, daemon=True, name="gu.sim watchdog")
        self.timer.start()

    def new_block(self) -> None:
        self.deadline = time.monotonic() + self.limit

    def _watch(self) -> None:
        while not self.wake.wait(min(0.25, self.limit)):
            if time.monotonic() < self.deadline:
                continue
            with self.lock:
                if self.active:
                    self.fired = True
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(self.thread_id), ctypes.py_object(_Stop)
                    )
            return

    def close(self) -> bool:
        """Stop watching; True if the watchdog fired (its exception cleared if still pending)."""
        with self.lock:
            self.active = False
            fired = self.fired
        self.wake.set()
        if fired:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), None)
        return fired


# --- running -----------------------------------------------------------------------------------


def _where(block, thread) -> str:
    return f"thread {tuple(thread)} of block {tuple(block)}"


def _site(site: int) -> str:
    _, line, _ = SITES[site]
    return f"line {line}"


def _kernel_line(tb, codes) -> int | None:
    """The deepest line of ``tb`` in code the simulator compiled (the learner's line)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


class Launch:
    """One launch of a rewritten kernel over a grid."""

    def __init__(
        self, function, griddim, blockdim, args, dynshared_size=0, loop_limit=None, observer=None
    ):
        self.grid_dim = _dims(griddim, "the grid (blocks per grid)")
        self.block_dim = _dims(blockdim, "the block (threads per block)")
        threads = self.block_dim[0] * self.block_dim[1] * self.block_dim[2]
        if threads > 1024:
            raise ValueError(
                f"a block of {threads} threads: a GPU allows at most 1024 threads per block"
            )
        self.module = Module(self.grid_dim, self.block_dim, int(dynshared_size))
        self.linker = _Linker(self.module)
        self.function = function
        self.kernel = self.linker.build(function, True)
        self.generator = self.linker.reaches_barrier(function)
        self.args = tuple(_argument(a) for a in args)
        self.limit = LOOP_LIMIT_S if loop_limit is None else loop_limit
        bx, by, bz = self.block_dim
        self.thread_ids = [Dim3(x, y, z) for z, y, x in product(range(bz), range(by), range(bx))]
        self.thread_xs = [tid.x for tid in self.thread_ids]
        self.codes = {f.__code__ for f in self.linker.built.values()}
        self.visits: dict = {}  # (thread, site) -> calls of activemask there, this block
        self.observer = observer
        self.lenient = observer is not None and observer.lenient_barriers
        self.keep_going = observer is not None and observer.keep_going
        if observer is not None:
            # each compiled code object -> its source function's (what numba's simulator runs)
            self.original = {b.__code__: f.__code__ for (f, _), b in self.linker.built.items()}
            self.module.shared.observe = observer.shared
            observer.start(self)

    def run(self) -> None:
        if self.observer is None and lockstep.try_run(self):
            return  # every thread of each block at once, exactly as below (gpu_utils.sim.lockstep)
        watchdog = _Watchdog(self.limit)
        block = (0, 0, 0)
        tid = None
        try:
            module = self.module
            gx, gy, gz = self.grid_dim
            run_block = self._run_generators if self.generator else self._run_plain
            if self.keep_going and not self.generator:
                run_block = self._run_plain_kept
            observer = self.observer
            for z, y, x in product(range(gz), range(gy), range(gx)):
                block = (x, y, z)
                module.set_block(block)
                self.visits.clear()
                watchdog.new_block()
                if observer is not None:
                    observer.begin_block(self)
                run_block()
                if observer is not None:
                    observer.end_block(self)
        except _Stop:
            pass
        except (SimulatorError, NotHandledYet):
            watchdog.close()
            raise
        except Exception as error:
            watchdog.close()
            tid = self.module.threadIdx
            self._raise_from_kernel(error, block, tid)
        finally:
            fired = watchdog.close()
        if fired:
            line = self._last_line
            where = _where(block, self.module.threadIdx)
            at = f"line {line}" if line else "its code"
            raise KernelLoops(
                f"the kernel ran for more than {self.limit:g} s in one block and was stopped: "
                f"{where} was at {at}. Does a loop never end (a condition that never changes, "
                "a stride of 0, `i += 1` missing)?",
                thread=tuple(self.module.threadIdx),
                block=tuple(block),
                line=line,
            )

    _last_line = None

    def where(self, i: int) -> str:
        """Thread ``i`` (linear id) of the block that runs now, in words."""
        return _where(self.module.blockIdx, self.thread_ids[i])

    def located(self, i: int, line: int | None, cause: str) -> dict:
        """Where thread ``i`` (linear id) of the block that runs now is, as error attributes."""
        return {
            "thread": tuple(self.thread_ids[i]),
            "block": tuple(self.module.blockIdx),
            "line": line,
            "cause": cause,
        }

    def _raise_from_kernel(self, error, block, tid):
        traceback = error.__traceback__
        line = _kernel_line(traceback, self.codes)
        where = _where(block, tid) + (f", line {line}" if line else "")
        thread, block = tuple(tid), tuple(block)
        if not isinstance(error, IndexOutOfBounds) and isinstance(error, IndexError):
            found = _numpy_out_of_bounds(error, self.codes)
            if found:
                error = found
        if isinstance(error, IndexOutOfBounds):
            new = error.located(f"{where}: {error.cause}", thread, block, line)
            raise new.with_traceback(traceback) from None
        message = f"{where}: {error}"
        try:
            new = type(error)(message)
        except Exception:
            raise SimulatorError(
                message, thread=thread, block=block, line=line, cause=str(error)
            ).with_traceback(traceback) from error
        with contextlib.suppress(AttributeError, TypeError):  # for the checkers: no parsing
            new.thread, new.block, new.line, new.cause = thread, block, line, str(error)
            if isinstance(error, (AttributeError, NameError)):  # the missing name, its owner
                new.name = error.name
                if isinstance(error, AttributeError):
                    new.obj = error.obj
        raise new.with_traceback(traceback) from None

    def _run_plain(self) -> None:
        module, kernel, args = self.module, self.kernel, self.args
        try:
            if self.linker.uses_grid1:
                base = module._base[0]
                for tid, x in zip(self.thread_ids, self.thread_xs, strict=True):
                    module.threadIdx = tid
                    module.grid1 = base + x
                    kernel(*args)
            else:
                for tid in self.thread_ids:
                    module.threadIdx = tid
                    kernel(*args)
        except _Stop as stop:
            self._last_line = _kernel_line(stop.__traceback__, self.codes)
            raise

    def _run_plain_kept(self) -> None:
        """``_run_plain`` for an observer that keeps going past a thread's error."""
        module, kernel, args, observer = self.module, self.kernel, self.args, self.observer
        base = module._base[0]
        try:
            for i, (tid, x) in enumerate(zip(self.thread_ids, self.thread_xs, strict=True)):
                module.threadIdx = tid
                module.grid1 = base + x
                try:
                    kernel(*args)
                except Exception as error:
                    observer.failed(i, error)
        except _Stop as stop:
            self._last_line = _kernel_line(stop.__traceback__, self.codes)
            raise

    def _run_generators(self) -> None:
        module, kernel, args = self.module, self.kernel, self.args
        tids = self.thread_ids
        n = len(tids)
        gens = [kernel(*args) for _ in range(n)]
        waiting: dict[int, tuple] = {}
        exits: dict = {}  # exit line (None: the end) -> first thread that left there
        runnable = dict.fromkeys(range(n))  # thread -> what its barrier returns to it
        base = module._base[0]
        grid1 = [base + x for x in self.thread_xs]
        observer = self.observer
        try:
            while True:
                yields = []
                append = yields.append
                left = False
                for i, sent in runnable.items():
                    module.threadIdx = tids[i]
                    module.grid1 = grid1[i]
                    try:
                        append(gens[i].send(sent))
                    except StopIteration as stop:
                        exits.setdefault(stop.value, i)
                        gens[i] = None
                        append(None)
                        left = True
                    except Exception as error:
                        if not self.keep_going:
                            raise
                        observer.failed(i, error)  # this thread ends; the others run on
                        gens[i] = None
                        append(None)
                        left = True
                first = yields[0] if yields else None
                if (
                    observer is None
                    and not left
                    and not waiting
                    and first is not None
                    and first[0] == SYNC
                    and len(yields) == n
                    and yields.count(first) == n
                    and not exits
                ):
                    continue  # the common case: every thread at the same syncthreads()
                for i, value in zip(runnable, yields, strict=True):
                    if value is not None:
                        waiting[i] = value
                if not waiting:
                    return
                runnable = self._release(waiting, gens, exits)
        except _Stop as stop:
            self._last_line = _kernel_line(stop.__traceback__, self.codes)
            raise

    def _release(self, waiting, gens, exits) -> dict:
        """The threads that may go on, with what each barrier returns to them."""
        if any(w[0] >= SYNCWARP for w in waiting.values()):
            return warps.release(self, waiting, gens)
        tids = self.thread_ids
        sites = {w[1] for w in waiting.values()}
        block = self.module.blockIdx
        if len(sites) > 1 and not self.lenient:
            by_site: dict[int, int] = {}
            for i, w in waiting.items():
                by_site.setdefault(w[1], i)
            (s1, i1), (s2, i2) = list(by_site.items())[:2]
            raise BarrierDivergence(
                f"{_where(block, tids[i1])} waits at the cuda.syncthreads() on {_site(s1)} while "
                f"{_where(block, tids[i2])} waits at the one on {_site(s2)}: every thread of the "
                "block must reach the same barriers, the same number of times",
                **self.located(i1, SITES[s1][1], None),
            )
        site = next(iter(sites))
        if exits and not self.lenient:
            first_waiter = next(iter(waiting))
            barrier_line = _gen_line_top(gens[first_waiter])
            for line, i in exits.items():
                if line is None or barrier_line is None or line > barrier_line:
                    left = "at its end" if line is None else f"at line {line}"
                    raise BarrierDivergence(
                        f"{_where(block, tids[first_waiter])} waits at the cuda.syncthreads() "
                        f"on {_site(site)}, which {_where(block, tids[i])} never reached: it "
                        f"skipped the barrier and left the kernel {left}. Every thread of the "
                        "block must reach each cuda.syncthreads(): move it out of the `if` (or "
                        "loop) that not all threads take",
                        **self.located(first_waiter, SITES[site][1], None),
                    )
        kind = next(iter(waiting.values()))[0]
        result = None
        if kind in (SYNC_COUNT, SYNC_AND, SYNC_OR):
            values = [bool(w[2]) for w in waiting.values()]
            if kind == SYNC_COUNT:
                result = sum(values)
            elif kind == SYNC_AND:
                result = int(all(values))
            else:
                result = int(any(values))
        released = dict.fromkeys(waiting, result)
        if self.observer is not None:
            self.observer.released(kind, {i: w[1] for i, w in waiting.items()})
        waiting.clear()
        return released


_NUMPY_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)")


def _numpy_out_of_bounds(error, codes) -> IndexOutOfBounds | None:
    """numpy's "index 10 is out of bounds for axis 0 with size 10", with the array named: the
    instruction that raised, through its source position, is one of the rewrite's indices."""
    match = _NUMPY_BOUNDS.search(str(error))
    if not match:
        return None
    tb, last = error.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            last = tb
        tb = tb.tb_next
    if last is None:
        return None
    code = last.tb_frame.f_code
    positions = list(code.co_positions())
    index = last.tb_lasti // 2
    if not 0 <= index < len(positions):
        return None
    line, _, column, _ = positions[index]
    label = rewrite.LABELS.get(code, {}).get((line, column))
    if label is None:
        return None
    value = last.tb_frame.f_locals.get(label, last.tb_frame.f_globals.get(label))
    value = getattr(value, "_ary", value)  # an observed array
    shape = tuple(value.shape) if isinstance(value, np.ndarray) else None
    of_shape = f" of shape {shape}" if shape is not None else ""
    return IndexOutOfBounds(
        f"index {match[1]} is out of bounds for axis {match[2]} with size {match[3]} "
        f"(array `{label}`{of_shape})",
        array=label,
        index=int(match[1]),
        axis=int(match[2]),
        size=int(match[3]),
        shape=shape,
    )


def _gen_line_top(gen) -> int | None:
    """The line of the kernel (outermost function) where ``gen`` is suspended."""
    frame = gen.gi_frame if gen is not None else None
    return frame.f_lineno if frame is not None else None


def launch(
    function, griddim, blockdim, *args, dynshared_size: int = 0, loop_limit=None, observer=None
) -> None:
    """Run ``function`` (a kernel's Python function, ``kernel.py_func``, or the kernel) over a
    grid of ``griddim`` blocks of ``blockdim`` threads, with ``args`` as numpy arrays, device
    arrays or scalars; ``observer`` (:mod:`gpu_utils.sim.observe`) sees its memory accesses."""
    prepare(
        function,
        griddim,
        blockdim,
        *args,
        dynshared_size=dynshared_size,
        loop_limit=loop_limit,
        observer=observer,
    ).run()


def prepare(
    function, griddim, blockdim, *args, dynshared_size: int = 0, loop_limit=None, observer=None
) -> Launch:
    """:func:`launch` without the run: the kernel and its device functions rewritten and
    compiled, nothing run yet. A :class:`NotHandledYet` from here means that nothing ran (the
    launch hook then hands the kernel to numba-cuda's simulator); ``.run()`` runs it."""
    inner = _device_function(function)
    if inner is not None:
        function = inner
    if not isinstance(function, types.FunctionType):
        raise TypeError(
            f"gpu_utils.sim.launch runs a kernel's Python function (kernel.py_func) or a "
            f"@cuda.jit kernel; got {type(function).__name__}"
        )
    return Launch(function, griddim, blockdim, args, dynshared_size, loop_limit, observer)
