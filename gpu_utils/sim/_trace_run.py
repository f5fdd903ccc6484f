"""The engine behind :mod:`gpu_utils.one_gpu.trace` (chapter 04): run a kernel on Numba's CUDA simulator,
one block at a time, while every thread logs its global and shared memory accesses.

Private: notebooks use ``gu.trace.analyze``. The launch mirrors the simulator's own
(``numba.cuda.simulator.kernel``): the kernel's ``cuda`` global is swapped for a fake module and
each CUDA thread is a Python thread. Arrays are wrapped so that each element access appends one
record to its thread's log; ``syncthreads`` uses a real barrier (an exited thread no longer counts),
so it costs microseconds rather than the simulator's tens of milliseconds.

The first exception stops the launch and is raised, as a launch on the simulator does. With
``run(..., keep_going=True)`` (``gu.viz.thread_map``, chapter 03) a thread's exception ends that
thread only: it is kept as the thread's ``failure``, the thread counts as exited for barriers and
warp intrinsics, and every other thread runs on.

What orders two accesses of one block is recorded with each access: the number of ``syncthreads``
passed, and a vector clock of the warp's ``syncwarp`` barriers (each ``syncwarp(mask)`` merges
the clocks of the lanes in its mask only, so it orders those lanes and no others). Atomics return
values that remember being tested (compared, or used as a condition): a ``threadfence`` orders a
write for another block only together with an atomic that the reading thread then tested.
"""

from __future__ import annotations

import contextlib
import dis
import linecache
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from numpy.lib.array_utils import byte_bounds

from ..pickling import python_function as _python_function
from . import warp
from ._numba_sim import require_simulator_internals

LOAD, STORE = 0, 1
GLOBAL, SHARED = 0, 1
SHARED_ALIGNMENT = 16  # bytes; each static shared array starts on such a boundary

# One record per element access, a tuple for speed. Fields, in order:
KIND, SPACE, ROOT, OFFSET, NBYTES, CODE, LINE, OCCURRENCE, EPOCH, WCLOCK = range(10)
ATOMIC, FENCES_BEFORE, TESTED = 10, 11, 12
# EPOCH: syncthreads passed. WCLOCK: the thread's warp vector clock (a tuple of 32 syncwarp
# counts). FENCES_BEFORE: threadfences made before. TESTED: the (root, offset) of the atomics whose
# returned value the thread had tested before this access.
NO_SYNCWARP = (0,) * 32


@dataclass
class Root:
    """One allocation: a kernel argument (global) or a ``cuda.shared.array`` (shared)."""

    name: str
    space: int
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...]
    base: int = 0  # byte address of the allocation's start in its space (shared layout)
    unit: int = 0  # bytes: every access covers whole units (gcd of the widths and offsets seen)
    mixed: bool = False  # viewed with more than one width (or misaligned): compare by units

    def __post_init__(self) -> None:
        self.unit = self.unit or self.dtype.itemsize

    def admit(self, itemsize: int, offset: int = 0, strides: tuple[int, ...] = ()) -> None:
        """Another view of this allocation: accesses of its width must still cover whole units."""
        self.unit = math.gcd(self.unit, itemsize, offset, *strides)
        if itemsize != self.dtype.itemsize or self.unit != self.dtype.itemsize:
            self.mixed = True

    def element(self, offset: int) -> tuple[int, ...] | None:
        """The element index at byte ``offset`` from the start, or None if it is ambiguous."""
        itemsize = self.dtype.itemsize
        if offset % itemsize or not self.shape:
            return None
        index, rest = [], offset
        for stride in sorted(self.strides, reverse=True):
            if stride <= 0:
                return None
            index.append(rest // stride)
            rest %= stride
        if rest:
            return None
        order = sorted(range(len(self.shape)), key=lambda k: self.strides[k], reverse=True)
        result = [0] * len(self.shape)
        for position, k in enumerate(order):
            result[k] = int(index[position])
        if any(i >= s for i, s in zip(result, self.shape, strict=True)):
            return None
        return tuple(result)


def _pointer(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


class TracedArray:
    """A kernel's view of an array: element reads and writes are logged, slices stay traced."""

    __slots__ = ("_ary", "_offset", "_root", "_root_index")

    def __init__(self, ary: np.ndarray, root_index: int, root: Root, offset: int) -> None:
        self._ary = ary
        self._root_index = root_index
        self._root = root
        self._offset = offset  # byte offset of ary's first element from the root's start

    def _byte_offset(self, index) -> int:
        ary = self._ary
        if not isinstance(index, tuple):
            index = (index,)
        offset = self._offset
        for k, i in enumerate(index):
            i = int(i)
            if i < 0:
                i += ary.shape[k]
            offset += i * ary.strides[k]
        return offset

    def _log(self, index, kind: int) -> None:
        thread = threading.current_thread()
        log = getattr(thread, "records", None)
        if log is None:  # touched outside a traced kernel
            return
        site = thread.atomic_site
        if site is None:
            frame = sys._getframe(2)
            site = (frame.f_code, frame.f_lineno)
        occurrences = thread.occurrences
        count = occurrences.get(site, 0)
        occurrences[site] = count + 1
        log.append(
            (
                kind,
                self._root.space,
                self._root_index,
                self._byte_offset(index),
                self._ary.itemsize,
                site[0],
                site[1],
                count,
                thread.epoch,
                thread.wclock,
                site is thread.atomic_site,
                thread.fences,
                thread.tested,
            )
        )

    def _view(self, value: np.ndarray) -> TracedArray:
        offset = self._offset + _pointer(value) - _pointer(self._ary)
        return TracedArray(value, self._root_index, self._root, offset)

    def __getitem__(self, index):
        value = self._ary[index]
        if isinstance(value, np.ndarray):
            return self._view(value)
        self._log(index, LOAD)
        return value

    def __setitem__(self, index, value) -> None:
        if isinstance(value, TracedArray):
            value = value._ary
        self._ary[index] = value
        target = self._ary[index]
        if isinstance(target, np.ndarray):  # a slice assignment: log every element written
            view = self._view(target)
            for element in np.ndindex(*target.shape):
                view._log(element, STORE)
        else:
            self._log(index, STORE)

    def __len__(self) -> int:
        return len(self._ary)

    def __iter__(self) -> Iterator:
        for i in range(len(self._ary)):
            yield self[i]

    def __getattr__(self, name: str):
        return getattr(self._ary, name)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._ary, dtype=dtype)

    @property
    def T(self) -> TracedArray:
        return self._view(self._ary.T)

    def __repr__(self) -> str:
        return f"TracedArray({self._root.name}, shape={self._ary.shape})"


class BlockBarrier:
    """``syncthreads`` for one block: releases when every thread still running has arrived."""

    def __init__(self, count: int) -> None:
        self.cond = threading.Condition()
        self.live = count
        self.arrived: list = []
        self.aborted = False

    def wait(self, thread) -> None:
        with self.cond:
            thread.syncthreads_blocked = True
            self.arrived.append(thread)
            if len(self.arrived) >= self.live:
                self._release()
            while thread.syncthreads_blocked:
                if self.aborted or thread.abort:
                    thread.syncthreads_blocked = False
                    raise RuntimeError("stopped because another thread raised an exception")
                self.cond.wait(0.05)

    def leave(self) -> None:
        with self.cond:
            self.live -= 1
            if self.arrived and len(self.arrived) >= self.live:
                self._release()

    def _release(self) -> None:
        tested = frozenset().union(*(t.tested for t in self.arrived))
        for waiting in self.arrived:
            waiting.tested = tested  # the barrier passes on what any thread learnt by an atomic
            waiting.syncthreads_blocked = False
        self.arrived = []
        self.cond.notify_all()

    def abort(self) -> None:
        with self.cond:
            self.aborted = True
            self.cond.notify_all()


class TraceThread(threading.Thread):
    """One CUDA thread: runs the kernel and keeps its own access log and barrier counters."""

    def __init__(self, block: BlockRun, block_index, thread_index, trace_code=None) -> None:
        super().__init__(daemon=True)
        from numba.cuda.simulator.kernelapi import Dim3  # cheap after the first import

        self._manager = block
        self.blockIdx = Dim3(*block_index)
        self.threadIdx = Dim3(*thread_index)
        bx, by, _ = block.block_dim
        self.thread_id = thread_index[0] + bx * (thread_index[1] + by * thread_index[2])
        self.syncthreads_blocked = False
        self.abort = False
        self.exception: tuple[BaseException, object] | None = None  # raised by BlockRun.run
        self.failure: Exception | None = None  # with keep_going: ended this thread only
        self.records: list[tuple] = []
        self.occurrences: dict = {}
        self.lane = self.thread_id % warp.WARP_SIZE
        self.epoch = 0  # syncthreads passed
        self.wclock = NO_SYNCWARP  # syncwarps of each lane of the warp this thread knows of
        self.barrier_sites: list[tuple] = []  # (code, line) of each syncthreads reached, in order
        self.fences = 0
        self.atomic_events: list[tuple[int, tuple]] = []  # (fences before, (root, offset))
        self.tested: frozenset = frozenset()  # atomics whose returned value was tested
        self.atomic_site = None
        self.path: list[int] | None = [] if trace_code is not None else None
        self._trace_code = trace_code
        warp.register_thread(self)

    def run(self) -> None:
        block = self._manager
        try:
            if self.path is not None:
                sys.settrace(self._tracer)
            block.function(*block.args)
        except Exception as error:
            if block.keep_going:
                self.failure = error  # ends this thread only: to the others it has exited
            else:
                tid = f"tid={list(self.threadIdx)}"
                ctaid = f"ctaid={list(self.blockIdx)}"
                message = f"{tid} {ctaid}: {error}" if str(error) else f"{tid} {ctaid}"
                try:
                    renamed = type(error)(message)
                except Exception:
                    renamed = RuntimeError(f"{type(error).__name__}: {message}")
                self.exception = (renamed, sys.exc_info()[2])
                block.fail()
        except warp.LaunchStopped:
            self._gu_stopped = True  # another thread's error ends the launch; stop quietly
        finally:
            sys.settrace(None)
            block.barrier.leave()
            warp.thread_exited(self)

    def _tracer(self, frame, event, arg):
        if frame.f_code is not self._trace_code:
            return None
        path = self.path

        def line(frame, event, arg):
            if event == "line":
                path.append(frame.f_lineno)
            return line

        return line

    # --- what the fake cuda module calls ----------------------------------------------------

    def syncthreads(self) -> None:
        self.barrier_sites.append(_kernel_site(sys._getframe(1)))
        if self.abort:
            raise RuntimeError("stopped because another thread raised an exception")
        self._manager.barrier.wait(self)
        self.epoch += 1

    def _vote(self, value, combine: Callable[[np.ndarray], object]):
        state = self._manager.block_state
        state[tuple(self.threadIdx)] = value
        self.syncthreads()
        result = combine(state)
        self.syncthreads()
        return result

    def syncthreads_count(self, value):
        return self._vote(value, np.count_nonzero)

    def syncthreads_and(self, value):
        return self._vote(value, lambda state: 1 if np.all(state) else 0)

    def syncthreads_or(self, value):
        return self._vote(value, lambda state: 1 if np.any(state) else 0)

    def syncwarp_arrive(self) -> tuple[int, ...]:
        """The clock this lane brings to a syncwarp: its own count advanced by one."""
        clock = list(self.wclock)
        clock[self.lane] += 1
        return tuple(clock)

    def syncwarp_leave(self, clocks: list[tuple[int, ...]]) -> None:
        """After a syncwarp: know everything the lanes in its mask knew (and nothing else)."""
        self.wclock = tuple(map(max, *clocks)) if len(clocks) > 1 else clocks[0]

    def tested_atomic(self, location: tuple) -> None:
        if location not in self.tested:
            self.tested = self.tested | {location}


def _kernel_site(frame) -> tuple:
    """(code, line) of the first frame outside this engine and numba: the kernel's call site."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name != __file__ and _SIMULATOR_DIR not in name:
            return frame.f_code, frame.f_lineno
        frame = frame.f_back
    return None, 0


_SIMULATOR_DIR = os.path.join("numba", "cuda", "simulator")


class BlockRun:
    """Runs one block's threads to completion (the trace's replacement for BlockManager)."""

    def __init__(
        self, function, args, block_dim, recorder: Recorder, trace_code=None, keep_going=False
    ) -> None:
        self.function = function
        self.args = args
        self.block_dim = tuple(block_dim)
        self._block_dim = self.block_dim  # the attribute gpu_utils.sim.warp reads
        self.block_state = np.zeros(self.block_dim, dtype=np.bool_)
        self.barrier = BlockBarrier(int(np.prod(self.block_dim)))
        self.recorder = recorder
        self.trace_code = trace_code
        self.keep_going = keep_going
        self.threads: list[TraceThread] = []

    def fail(self) -> None:
        for thread in self.threads:
            thread.abort = True
        self.barrier.abort()

    def run(self, block_index) -> list[TraceThread]:
        self.threads = [
            TraceThread(self, block_index, (x, y, z), self.trace_code)
            for z in range(self.block_dim[2])
            for y in range(self.block_dim[1])
            for x in range(self.block_dim[0])
        ]
        for thread in self.threads:
            thread.start()
        for thread in self.threads:
            thread.join()
        failures = [t for t in self.threads if t.exception is not None]
        if failures:
            first = next(
                (t for t in failures if "another thread raised" not in str(t.exception[0])),
                failures[0],
            )
            error, traceback = first.exception
            raise error.with_traceback(traceback)
        return sorted(self.threads, key=lambda t: t.thread_id)


_SHARED_NAME = re.compile(r"(\w+)\s*(?::[^=]*)?=\s*cuda\.shared\.array")


class Recorder:
    """The allocations of one traced launch, and how to wrap the kernel's arguments."""

    def __init__(self) -> None:
        self.roots: list[Root] = []
        self._shared_sites: dict = {}
        self._shared_end = 0
        self._dynamic_root: int | None = None

    def _add(self, root: Root) -> int:
        self.roots.append(root)
        return len(self.roots) - 1

    def wrap_arguments(self, names: list[str], args: tuple) -> list:
        """Wrap array arguments; arguments sharing memory share one root (one allocation)."""
        wrapped, spans = [], []  # spans: (start, end, root index) of arrays seen so far
        for k, arg in enumerate(args):
            array = _host_array(arg)
            if array is None:
                wrapped.append(arg)
                continue
            name = names[k] if k < len(names) else f"arg{k}"
            low, high = byte_bounds(array)
            for start, end, index in spans:
                if low < end and start < high:
                    root_index, offset = index, _pointer(array) - start
                    self.roots[index].admit(array.itemsize, offset, array.strides)
                    break
            else:
                root = Root(name, GLOBAL, array.shape, array.dtype, array.strides)
                root_index, offset = self._add(root), _pointer(array) - low
                spans.append((low, high, root_index))
            wrapped.append(TracedArray(array, root_index, self.roots[root_index], offset))
        return wrapped

    def shared_array(
        self, site, shape, dtype, block: BlockRun, dynamic: np.ndarray | None, store_name=None
    ):
        """The traced shared array allocated at ``site`` for the current block."""
        allocations = block.__dict__.setdefault("shared", {})
        if site in allocations:
            return allocations[site]
        if dynamic is not None:
            if self._dynamic_root is None:
                self._dynamic_root = self._add(
                    Root("dynamic shared memory", SHARED, (dynamic.size,), dtype, (dtype.itemsize,))
                )
            index = self._dynamic_root
            self.roots[index].admit(dtype.itemsize)
            array = dynamic
        else:
            index = self._shared_sites.get(site)
            array = np.empty(shape, dtype)
            if index is None:
                name = _shared_name(site, store_name)
                start = -(-self._shared_end // SHARED_ALIGNMENT) * SHARED_ALIGNMENT
                root = Root(name, SHARED, array.shape, array.dtype, array.strides, base=start)
                index = self._shared_sites[site] = self._add(root)
                self._shared_end = start + array.nbytes
        traced = TracedArray(array, index, self.roots[index], 0)
        allocations[site] = traced
        return traced


def _shared_name(site, store_name: str | None = None) -> str:
    """The kernel's name for a shared array: the variable the allocation is stored in (read from
    the bytecode, so it works without the source), else from the source line."""
    if store_name:
        return store_name
    code, line = site
    text = linecache.getline(code.co_filename, line)
    match = _SHARED_NAME.search(text)
    return match.group(1) if match else f"shared array (line {line})"


_STORES = {"STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL"}
_CALLING = {"PRECALL", "CALL", "CACHE", "EXTENDED_ARG", "KW_NAMES", "CALL_FUNCTION", "CALL_METHOD"}


def _stored_name(frame) -> str | None:
    """The variable that the call being made in ``frame`` is assigned to (``s = f(...)``)."""
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset < frame.f_lasti or instruction.opname in _CALLING:
            continue
        return instruction.argval if instruction.opname in _STORES else None
    return None


def _host_array(arg) -> np.ndarray | None:
    """The NumPy array behind a kernel argument (device arrays are copied to the host)."""
    if isinstance(arg, np.ndarray):
        return arg if arg.ndim > 0 else None
    inner = getattr(arg, "_item", arg)  # the simulator's FakeWithinKernelCUDAArray
    ary = getattr(inner, "_ary", None)  # the simulator's FakeCUDAArray
    if isinstance(ary, np.ndarray):
        return ary
    if hasattr(arg, "copy_to_host") and hasattr(arg, "__cuda_array_interface__"):
        return arg.copy_to_host()  # a real device array (GPU mode): trace a host copy
    return None


def _tracing_module(grid_dim, block_dim, dynshared_size: int, recorder: Recorder):
    """A fake ``cuda`` module whose shared arrays, atomics and fences are traced."""
    from numba.cuda import types
    from numba.cuda.np import numpy_support
    from numba.cuda.simulator.kernelapi import FakeCUDAAtomic, FakeCUDAModule

    class TracingShared:
        def array(self, shape, dtype, alignment=None):
            if alignment is not None:
                raise RuntimeError("Array alignment is not supported in cudasim")
            if isinstance(dtype, types.Type):
                dtype = numpy_support.as_dtype(dtype)
            dtype = np.dtype(dtype)
            thread = threading.current_thread()
            frame = sys._getframe(1)
            site = (frame.f_code, frame.f_lineno)
            named = shape == 0 or site in recorder._shared_sites  # dynamic, or named already
            store_name = None if named else _stored_name(frame)
            block = thread._manager
            dynamic = None
            if shape == 0:
                buffer = block.__dict__.setdefault(
                    "dynshared", np.zeros(dynshared_size, dtype=np.byte)
                )
                count = dynshared_size // dtype.itemsize
                dynamic = np.frombuffer(buffer.data, dtype=dtype, count=count)
            with module_lock:
                return recorder.shared_array(site, shape, dtype, block, dynamic, store_name)

    class TracingAtomic(FakeCUDAAtomic):
        pass

    def traced(name):
        original = getattr(FakeCUDAAtomic, name)

        def operation(self, *args):
            thread = threading.current_thread()
            frame = sys._getframe(1)
            thread.atomic_site = (frame.f_code, frame.f_lineno)
            logged = len(thread.records)
            try:
                result = original(self, *args)
            finally:
                thread.atomic_site = None
            if len(thread.records) == logged:  # not a traced array (e.g. cuda.local.array)
                return result
            last = thread.records[-1]
            location = (last[ROOT], last[OFFSET])
            thread.atomic_events.append((thread.fences, location))
            return _tested_value(result, thread, location)

        operation.__name__ = name
        return operation

    for name in dir(FakeCUDAAtomic):
        if not name.startswith("_") and callable(getattr(FakeCUDAAtomic, name)):
            setattr(TracingAtomic, name, traced(name))

    def fence(self):
        threading.current_thread().fences += 1

    class TracingCUDAModule(FakeCUDAModule):
        threadfence = threadfence_block = threadfence_system = fence

        def __init__(self):
            super().__init__(grid_dim, block_dim, dynshared_size)
            self._shared = TracingShared()
            self._atomic = TracingAtomic()

    module_lock = threading.Lock()
    return TracingCUDAModule()


class _Tested:
    """Mixin for an atomic's returned value: a comparison or truth test of it (or of arithmetic
    on it) tells the thread, which then counts as ordered after the writes that were fenced
    before the atomics this one followed (the CUDA samples' threadFenceReduction "ticket")."""

    _gu_from: tuple

    def _gu_test(self) -> None:
        thread, location = self._gu_from
        thread.tested_atomic(location)


def _tested_value(value, thread, location):
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (int, np.integer)):
        result = _TestedInt(int(value))
    elif isinstance(value, (float, np.floating)):
        result = _TestedFloat(float(value))
    else:
        return value
    result._gu_from = (thread, location)
    return result


def _tested_class(base: type) -> type:
    namespace: dict = {"__hash__": base.__hash__}

    def test(name):
        method = getattr(base, name)

        def tested(self, *args):
            self._gu_test()
            return method(self, *args)

        return tested

    def carry(name):
        method = getattr(base, name)

        def carried(self, *args):
            result = method(self, *args)
            if result is NotImplemented:
                return result
            return _tested_value(result, *self._gu_from)

        return carried

    for name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__"):
        namespace[name] = test(name)
    arithmetic = [
        "add",
        "sub",
        "mul",
        "floordiv",
        "truediv",
        "mod",
        "and",
        "or",
        "xor",
        "lshift",
        "rshift",
    ]
    for op in arithmetic:
        for name in (f"__{op}__", f"__r{op}__"):
            if hasattr(base, name):
                namespace[name] = carry(name)
    for name in ("__neg__", "__abs__"):
        namespace[name] = carry(name)
    return type(f"Tested{base.__name__.title()}", (_Tested, base), namespace)


_TestedInt = _tested_class(int)
_TestedFloat = _tested_class(float)


@contextlib.contextmanager
def _device_functions_simulated(function) -> Iterator[None]:
    """In GPU mode, let a kernel's ``@cuda.jit(device=True)`` helpers run as Python."""
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    replaced: list[tuple[dict, str, object]] = []
    seen: set[int] = set()

    def visit(fn) -> None:
        if id(fn) in seen:
            return
        seen.add(id(fn))
        namespace = getattr(fn, "__globals__", {})
        for name, value in list(namespace.items()):
            py_func = getattr(value, "py_func", None)
            if py_func is None or isinstance(value, FakeCUDAKernel):
                continue
            if not getattr(value, "targetoptions", {}).get("device", False):
                continue
            replaced.append((namespace, name, value))
            namespace[name] = FakeCUDAKernel(py_func, device=True)
            visit(py_func)

    visit(function)
    try:
        yield
    finally:
        for namespace, name, value in reversed(replaced):
            namespace[name] = value


def python_function(kernel) -> Callable:
    """The Python function behind a kernel (simulator or GPU dispatcher) or a plain function."""
    function = _python_function(kernel, plain=True)
    if function is not None:
        return function
    raise TypeError(
        f"expected a kernel made with @cuda.jit (or its Python function), got {type(kernel).__name__}"
    )


#: Set by :func:`gpu_utils.sim.compare.analyze_both` while it runs one engine, else None.
forced_engine: str | None = None


def traced_on() -> str:
    """The engine a trace runs on: ``"course"`` (the default in simulator mode), ``"numba"``
    (``GPU_COURSE_SIM=numba``, or GPU mode) or ``"compare"`` (both, numba's report kept)."""
    if forced_engine is not None:
        return forced_engine
    from numba import config

    if not config.ENABLE_CUDASIM:
        return "numba"
    from . import engine_or_default

    return engine_or_default()  # a misspelt value: the default (the launch hook warns)


def run(
    kernel,
    griddim,
    blockdim,
    args: tuple,
    *,
    recorder: Recorder,
    on_block: Callable[[tuple[int, ...], list[TraceThread]], None],
    dynshared_size: int = 0,
    divergence: bool = True,
    keep_going: bool = False,
) -> tuple[Callable, tuple, tuple]:
    """Run ``kernel`` block by block, handing each finished block's threads to ``on_block``.

    Returns the kernel's Python function and the normalised grid and block dimensions. The first
    exception in a thread stops the launch and is raised; with ``keep_going=True`` it ends only
    that thread, is kept as its ``failure`` (None for a thread that finished), and every thread
    of the grid still runs.

    In simulator mode (unless ``GPU_COURSE_SIM=numba``) the launch runs on the course's engine
    (:mod:`gpu_utils.sim.tracing`, the same records), except a kernel that engine cannot
    compile (e.g. without source), which stays on numba-cuda's simulator.
    """
    if traced_on() == "course":
        from . import tracing

        done = tracing.run(
            kernel,
            griddim,
            blockdim,
            args,
            recorder=recorder,
            on_block=on_block,
            dynshared_size=dynshared_size,
            divergence=divergence,
            keep_going=keep_going,
        )
        if done is not None:
            return done
    warp.install()  # also warns when numba-cuda is not the tested release
    from numba.cuda.errors import normalize_kernel_dimensions
    from numba.cuda.simulator import kernel as simulator
    from numba.cuda.simulator import kernelapi

    require_simulator_internals(simulator, "_push_kernel_context", "FakeCUDAKernel")
    require_simulator_internals(
        kernelapi, "swapped_cuda_module", "FakeCUDAModule", "FakeCUDAAtomic", "Dim3"
    )
    swapped_cuda_module = kernelapi.swapped_cuda_module
    function = python_function(kernel)
    grid_dim, block_dim = normalize_kernel_dimensions(griddim, blockdim)
    code = function.__code__
    names = list(code.co_varnames[: code.co_argcount])
    traced_args = recorder.wrap_arguments(names, tuple(args))
    module = _tracing_module(grid_dim, block_dim, dynshared_size, recorder)
    trace_code = code if divergence else None
    with (
        simulator._push_kernel_context(module),
        swapped_cuda_module(function, module),
        _device_functions_simulated(function),
    ):
        for block_index in np.ndindex(*grid_dim):
            block = BlockRun(function, traced_args, block_dim, recorder, trace_code, keep_going)
            on_block(block_index, block.run(block_index))
    return function, tuple(grid_dim), tuple(block_dim)
