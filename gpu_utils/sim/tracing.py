"""``gu.trace`` (and its race check) on the course's simulator: an observer
(:mod:`gpu_utils.sim.observe`) that keeps, for every CUDA thread, the same access log that
``gu.trace``'s executor on numba-cuda's simulator (:mod:`gpu_utils.sim._trace_run`) keeps, so
``gu.trace``'s analysis (:mod:`gpu_utils.one_gpu.trace`) turns either into the same report.

Used by ``gu.trace.analyze`` when ``GPU_COURSE_SIM=course``. Each record is the tuple
``_trace_run`` documents (kind, space, allocation, byte offset, bytes, code, line, occurrence,
syncthreads passed, syncwarp clock, atomic, fences before, tested atomics); code objects are
those of the kernel's and device functions' source, as numba's simulator runs them. Barriers are
lenient, as there: a ``syncthreads`` releases once every thread still running waits at one, and
the analysis reports a barrier that not every thread reaches.
"""

from __future__ import annotations

import sys

import numpy as np
from numpy.lib.array_utils import byte_bounds

from . import _trace_run as numba_trace
from .engine import Launch, _device_function
from .observe import Observer
from .rewrite import SITE_CODES, SITES, SYNC, SYNCWARP, NotHandledYet
from .warp import WARP_SIZE

_VOTES_COUNT_TWICE = 2  # numba's trace runs syncthreads_count/_and/_or as two syncthreads


class TracedThread:
    """One CUDA thread's log, with the attributes ``gu.trace``'s analysis reads."""

    __slots__ = (
        "_trace_code",
        "atomic_events",
        "atomic_site",
        "barrier_sites",
        "blockIdx",
        "epoch",
        "failure",
        "fences",
        "lane",
        "occurrences",
        "path",
        "records",
        "tested",
        "threadIdx",
        "thread_id",
        "wclock",
    )

    def __init__(self, block_index, thread_index, thread_id: int, trace_code) -> None:
        self.blockIdx = tuple(block_index)
        self.threadIdx = tuple(thread_index)
        self.thread_id = thread_id
        self.lane = thread_id % WARP_SIZE
        self.records: list[tuple] = []
        self.occurrences: dict = {}
        self.epoch = 0
        self.wclock = numba_trace.NO_SYNCWARP
        self.barrier_sites: list[tuple] = []
        self.fences = 0
        self.atomic_events: list[tuple[int, tuple]] = []
        self.tested: frozenset = frozenset()
        self.atomic_site = None
        self.path: list[int] | None = [] if trace_code is not None else None
        self._trace_code = trace_code
        self.failure = None

    def tested_atomic(self, location: tuple) -> None:
        if location not in self.tested:
            self.tested = self.tested | {location}


class TraceObserver(Observer):
    """Keeps each thread's accesses as ``gu.trace`` records; hands each block to ``on_block``."""

    lenient_barriers = True

    def __init__(self, recorder, on_block, names, trace_code, keep_going=False) -> None:
        self.keep_going = keep_going
        self.recorder = recorder
        self.on_block = on_block
        self.names = names
        self.trace_code = trace_code  # the kernel's source code object, or None: no paths
        self.threads: list[TracedThread] = []
        self.launch = None
        self.module = None
        self.index_of: dict[int, int] = {}
        self.kernel_code = None
        self.pending: list | None = None  # blocks held back to be handed on in numba's order
        self.previous_trace = None

    # --- the launch ----------------------------------------------------------------------------
    def start(self, launch) -> None:
        self.launch = launch
        self.module = launch.module
        self.index_of = {id(t): k for k, t in enumerate(launch.thread_ids)}
        self.kernel_code = launch.kernel.__code__
        self.previous_trace = sys.gettrace()
        _, gy, gz = launch.grid_dim
        # numba's simulator runs blocks in np.ndindex order (x slowest), this engine x fastest;
        # the race check compares each block with the earlier ones, so hand them on in numba's
        self.pending = [] if gy > 1 or gz > 1 else None
        launch.args = tuple(self._wrap_arguments(launch.args))
        module = launch.module
        module.atomic = _TracingAtomic(self)
        module.threadfence = module.threadfence_block = module.threadfence_system = self.fence

    def _wrap_arguments(self, args) -> list:
        """As ``Recorder.wrap_arguments``: arguments sharing memory share one allocation."""
        recorder = self.recorder
        wrapped, spans = [], []
        for k, array in enumerate(args):
            if not isinstance(array, np.ndarray) or array.ndim == 0:
                wrapped.append(array)
                continue
            name = self.names[k] if k < len(self.names) else f"arg{k}"
            low, high = byte_bounds(array)
            for start, end, index in spans:
                if low < end and start < high:
                    root_index, offset = index, numba_trace._pointer(array) - start
                    recorder.roots[index].admit(array.itemsize, offset, array.strides)
                    break
            else:
                root = numba_trace.Root(
                    name, numba_trace.GLOBAL, array.shape, array.dtype, array.strides
                )
                root_index = recorder._add(root)
                offset = numba_trace._pointer(array) - low
                spans.append((low, high, root_index))
            wrapped.append(self.wrap(array, root_index, offset))
        return wrapped

    def begin_block(self, launch) -> None:
        code = self.trace_code
        block = tuple(launch.module.blockIdx)
        self.threads = [
            TracedThread(block, tid, k, code) for k, tid in enumerate(launch.thread_ids)
        ]
        if code is not None:
            sys.settrace(self._tracer)

    def end_block(self, launch) -> None:
        if self.trace_code is not None:
            sys.settrace(self.previous_trace)
        if self.pending is not None:
            self.pending.append((tuple(launch.module.blockIdx), self.threads))
        else:
            self.on_block(tuple(launch.module.blockIdx), self.threads)

    def finish(self) -> None:
        """Hand on the blocks held back, in numba's order (``np.ndindex`` of the grid)."""
        if self.pending:
            for block, threads in sorted(self.pending, key=lambda item: item[0]):
                self.on_block(block, threads)
            self.pending = []

    def _current(self) -> TracedThread:
        return self.threads[self.index_of[id(self.launch.module.threadIdx)]]

    # --- what gu.trace's executor records -------------------------------------------------------
    def shared(self, site, array, dynamic, frame):
        recorder = self.recorder
        if dynamic:
            dtype = array.dtype
            if recorder._dynamic_root is None:
                recorder._dynamic_root = recorder._add(
                    numba_trace.Root(
                        "dynamic shared memory",
                        numba_trace.SHARED,
                        (array.size,),
                        dtype,
                        (dtype.itemsize,),
                    )
                )
            index = recorder._dynamic_root
            recorder.roots[index].admit(dtype.itemsize)
        else:
            index = recorder._shared_sites.get(site)
            if index is None:
                code = self.launch.original.get(frame.f_code, frame.f_code)
                store_name = numba_trace._stored_name(frame)
                name = numba_trace._shared_name((code, frame.f_lineno), store_name)
                alignment = numba_trace.SHARED_ALIGNMENT
                start = -(-recorder._shared_end // alignment) * alignment
                root = numba_trace.Root(
                    name, numba_trace.SHARED, array.shape, array.dtype, array.strides, base=start
                )
                index = recorder._shared_sites[site] = recorder._add(root)
                recorder._shared_end = start + array.nbytes
        return self.wrap(array, index, 0)

    def access(self, array, index, kind) -> None:
        thread = self.threads[self.index_of[id(self.module.threadIdx)]]
        site = thread.atomic_site
        if site is None:
            frame = sys._getframe(2)
            code = frame.f_code
            site = (self.launch.original.get(code, code), frame.f_lineno)
        occurrences = thread.occurrences
        count = occurrences.get(site, 0)
        occurrences[site] = count + 1
        root = self.recorder.roots[array.token]
        thread.records.append(
            (
                kind,
                root.space,
                array.token,
                array.byte_offset(index),
                array._ary.itemsize,
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

    def failed(self, i, error) -> None:
        self.threads[i].failure = error

    def fence(self) -> None:
        self._current().fences += 1

    def released(self, kind, sites) -> None:
        threads = self.threads
        if kind == SYNCWARP:
            members = [threads[i] for i in sites]
            clocks = []
            for thread in members:
                clock = list(thread.wclock)
                clock[thread.lane] += 1
                clocks.append(tuple(clock))
            merged = tuple(map(max, *clocks)) if len(clocks) > 1 else clocks[0]
            for thread in members:
                thread.wclock = merged
            return
        passes = 1 if kind == SYNC else _VOTES_COUNT_TWICE
        members = [threads[i] for i in sites]
        tested = frozenset().union(*(t.tested for t in members))
        for i, site in sites.items():
            thread = threads[i]
            where = (SITE_CODES.get(site), SITES[site][1])
            thread.barrier_sites.extend([where] * passes)
            thread.epoch += passes
            thread.tested = tested

    # --- the kernel's own lines, for divergence -------------------------------------------------
    def _tracer(self, frame, event, arg):
        if event != "call" or frame.f_code is not self.kernel_code:
            return None
        k = self.index_of.get(id(self.module.threadIdx))
        if k is None or k >= len(self.threads):  # e.g. a stopped launch's generator closing
            return None
        path = self.threads[k].path

        def line(frame, event, arg):
            if event == "line":
                path.append(frame.f_lineno)
            return line

        return line


class _TracingAtomic:
    """``cuda.atomic`` while traced: numba-cuda simulator's own operations (so each logs the
    same accesses as there), with the site, the fences before and the tested returned value."""

    def __init__(self, observer: TraceObserver) -> None:
        from numba.cuda.simulator.kernelapi import FakeCUDAAtomic

        self._observer = observer
        self._fake = FakeCUDAAtomic()

    def __getattr__(self, name: str):
        original = getattr(self._fake, name)
        observer = self._observer

        def operation(*args):
            thread = observer._current()
            frame = sys._getframe(1)
            code = frame.f_code
            thread.atomic_site = (observer.launch.original.get(code, code), frame.f_lineno)
            logged = len(thread.records)
            try:
                result = original(*args)
            finally:
                thread.atomic_site = None
            if len(thread.records) == logged:  # not an observed array (cuda.local.array)
                return result
            last = thread.records[-1]
            location = (last[numba_trace.ROOT], last[numba_trace.OFFSET])
            thread.atomic_events.append((thread.fences, location))
            return numba_trace._tested_value(result, thread, location)

        operation.__name__ = name
        return operation


def run(
    kernel,
    griddim,
    blockdim,
    args: tuple,
    *,
    recorder,
    on_block,
    dynshared_size: int = 0,
    divergence: bool = True,
    keep_going: bool = False,
):
    """``gpu_utils.sim._trace_run.run`` on the course's engine: the same blocks of threads, with the
    same records, handed to ``on_block``; returns the kernel's Python function and the grid and
    block dimensions (``keep_going``: a thread's error is its ``failure`` and ends only that
    thread, as there); or None, before anything ran, when the engine cannot compile the kernel
    (its source cannot be found, or it uses what the engine does not handle yet)."""
    from numba.cuda.errors import normalize_kernel_dimensions

    function = numba_trace.python_function(kernel)
    inner = _device_function(function)
    function = inner if inner is not None else function
    grid_dim, block_dim = normalize_kernel_dimensions(griddim, blockdim)
    code = function.__code__
    names = list(code.co_varnames[: code.co_argcount])
    trace_code = code if divergence else None
    observer = TraceObserver(recorder, on_block, names, trace_code, keep_going)
    try:
        launch = Launch(function, grid_dim, block_dim, args, dynshared_size, None, observer)
    except NotHandledYet:
        if observer.launch is not None:  # it started: not a compile-time refusal
            raise
        return None
    previous = sys.gettrace()
    try:
        launch.run()
    finally:
        sys.settrace(previous)
    observer.finish()
    return function, tuple(grid_dim), tuple(block_dim)


__all__ = ["TraceObserver", "TracedThread", "run"]
