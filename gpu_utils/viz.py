"""Who wrote which element of a kernel's output (chapter 03).

``thread_map(kernel, griddim, blockdim, *args)`` launches the kernel once on Numba's CUDA simulator
and records, for every element of every array argument, which (block, thread) wrote it. It then
draws each array the kernel wrote to, coloured by the writer's block and annotated with the
writer's thread index, with unwritten elements left blank and elements written by more than one
thread marked in red: a wrong index shows up as a wrong pattern at a glance.

It always runs on the simulator, because only there can every single store be observed. In GPU
mode it starts a simulator in a separate process (a second or two), since a process that has
loaded Numba for the GPU cannot simulate. The learner's arrays are never modified: the kernel runs
on copies. Launches are limited to :data:`MAX_THREADS` threads, as the simulator runs about ten
thousand threads per second.

How recording works: the simulator hands a kernel its arrays as NumPy arrays of the same class as
the ones it was given. Each array argument is passed as an instance of a private ``ndarray``
subclass whose ``__setitem__`` notes the simulator thread's ``blockIdx`` and ``threadIdx`` before
storing. Atomics (``cuda.atomic.add``) store through the same path, so they are recorded too.
"""

from __future__ import annotations

import inspect
import math
import os
import pickle
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import runtime

__all__ = [
    "MAX_THREADS",
    "ThreadMap",
    "WriteMap",
    "thread_map",
]

#: The largest launch thread_map accepts: about one to two seconds on the simulator.
MAX_THREADS = 16_384
#: Seconds the simulator process of GPU mode may take.
SUBPROCESS_TIMEOUT = 120

Dim = tuple[int, int, int]
Write = tuple[np.ndarray, Dim, Dim]  # flat indices stored to, blockIdx, threadIdx


# --- recording ----------------------------------------------------------------------------------


class _Recorded(np.ndarray):
    """An ndarray that logs every store made from a simulator thread (one subclass per array)."""

    log: list[Write]

    def __array_finalize__(self, obj) -> None:
        self._flat = getattr(obj, "_flat", None)  # flat indices into the whole argument

    def _positions(self) -> np.ndarray:
        if self._flat is None:
            self._flat = np.arange(self.size).reshape(self.shape)
        return self._flat

    def __getitem__(self, index):
        result = super().__getitem__(index)
        if isinstance(result, _Recorded):  # a slice: keep track of where its elements live
            result._flat = self._positions()[index]
        return result

    def __setitem__(self, index, value) -> None:
        thread = threading.current_thread()
        block = getattr(thread, "blockIdx", None)
        if block is not None:  # a simulated CUDA thread (copies made by the host are not logged)
            touched = np.atleast_1d(self._positions()[index]).ravel()
            self.log.append((touched, tuple(block), tuple(thread.threadIdx)))
        super().__setitem__(index, value)


def _recorded_copy(array: np.ndarray) -> _Recorded:
    cls = type("Recorded", (_Recorded,), {"log": []})
    return np.array(array, copy=True).view(cls)


def _dim3(dim: int | tuple[int, ...]) -> Dim:
    dims = (dim,) if isinstance(dim, int | np.integer) else tuple(dim)
    if not 1 <= len(dims) <= 3 or any(int(d) < 1 for d in dims):
        raise ValueError(
            f"launch dimension {dim!r}: use a positive int or a tuple of 1 to 3 positive ints"
        )
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


def _host_array(arg: object) -> object:
    """NumPy arrays for array-like arguments (device arrays are copied back); scalars unchanged."""
    if hasattr(arg, "copy_to_host"):
        return arg.copy_to_host()
    return arg


Failure = tuple[Dim, Dim, str, str]  # blockIdx, threadIdx, exception type, message


def _catching_kernel(py_func, failures: list[Failure]):
    """A simulator kernel that runs ``py_func`` in every thread and notes, instead of raising,
    the exception of each thread that fails, so that every other thread still runs (as on a GPU,
    where a bad index does not stop the rest of the grid) and the report does not depend on
    which failing thread the simulator happened to notice first."""
    from numba import cuda

    body = cuda.jit(device=True)(py_func)  # called from a kernel, it sees the simulated `cuda`

    def kernel(*args):
        try:
            body(*args)
        except Exception as error:
            thread = threading.current_thread()
            first = (str(error).strip().splitlines() or [""])[0]
            failures.append(
                (tuple(thread.blockIdx), tuple(thread.threadIdx), type(error).__name__, first)
            )

    return cuda.jit(kernel)


def _explain(failures: list[Failure], griddim: Dim, blockdim: Dim) -> str | None:
    """A deterministic account of the failing threads: how many, and the lowest-numbered one."""
    if not failures:
        return None

    def global_id(failure: Failure) -> int:
        return _linear(failure[0], griddim) * math.prod(blockdim) + _linear(failure[1], blockdim)

    block, thread, kind, message = min(failures, key=global_id)
    used = _used_axes(griddim, blockdim)
    if kind == "NotImplementedError":
        return "the kernel raises NotImplementedError: write its body first"
    count = len(failures)
    text = (
        f"{count} thread{'s' if count > 1 else ''} raised {kind}; the first is thread "
        f"{_fmt_id(thread, used)} of block {_fmt_id(block, used)}: {message}"
    )
    if kind == "IndexError":
        text += (
            ". Threads indexed past the end of an array: guard the work (`if i < out.size:`) so "
            "threads outside the data do nothing"
        )
    return text + "."


def _record(py_func, griddim: Dim, blockdim: Dim, args: tuple) -> tuple[dict, str | None]:
    """Run the kernel on the simulator (this process must be in simulator mode); raw write logs."""
    if runtime.mode != "simulator":
        raise RuntimeError("recording needs a process in simulator mode")
    launch_args = [
        _recorded_copy(a) if isinstance(a, np.ndarray) and a.ndim > 0 else a for a in args
    ]
    failures: list[Failure] = []
    _catching_kernel(py_func, failures)[griddim, blockdim](*launch_args)
    logs = {
        position: (a.shape, list(type(a).log))
        for position, a in enumerate(launch_args)
        if isinstance(a, _Recorded)
    }
    return logs, _explain(failures, griddim, blockdim)


def _record_in_simulator_process(py_func, griddim: Dim, blockdim: Dim, args: tuple):
    """Run :func:`_record` in a fresh ``python -m gpu_utils.viz`` forced into simulator mode."""
    from .pickling import dumps

    with tempfile.TemporaryDirectory() as scratch:
        request, answer = Path(scratch, "request.pkl"), Path(scratch, "answer.pkl")
        request.write_bytes(pickle.dumps((dumps(py_func), griddim, blockdim, args)))
        env = dict(os.environ, GPU_COURSE_MODE="simulator")
        env.pop("NUMBA_ENABLE_CUDASIM", None)  # gpu_utils sets it from GPU_COURSE_MODE
        try:
            done = subprocess.run(
                [sys.executable, "-m", "gpu_utils.viz", str(request), str(answer)],
                env=env,
                capture_output=True,
                text=True,
                timeout=SUBPROCESS_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(
                f"the kernel was still running on the simulator after {SUBPROCESS_TIMEOUT} s: "
                "look for a loop that never ends, or draw the map for a smaller launch"
            ) from None
        if done.stdout:
            print(done.stdout, end="")  # the kernel's own prints
        if done.returncode != 0 or not answer.exists():
            raise RuntimeError(
                "thread_map's simulator process failed; its last lines were:\n"
                + "\n".join(done.stderr.strip().splitlines()[-5:])
            )
        return pickle.loads(answer.read_bytes())


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteMap:
    """Who wrote each element of one array argument.

    ``writes`` counts stores per element and ``writers`` the distinct threads that made them.
    ``block`` and ``thread`` hold, per element, the (x, y, z) ``blockIdx`` and ``threadIdx`` of the
    lowest-numbered thread that wrote it (-1 where nothing was written), so the picture does not
    depend on the order in which the simulator happened to run the threads.
    """

    name: str
    position: int
    shape: tuple[int, ...]
    writes: np.ndarray
    writers: np.ndarray
    block: np.ndarray
    thread: np.ndarray

    @property
    def unwritten(self) -> np.ndarray:
        return self.writes == 0

    @property
    def shared(self) -> np.ndarray:
        """Elements written by more than one thread."""
        return self.writers > 1

    def describe(self) -> str:
        """One line: how many elements were written once, never, or by several threads."""
        size = int(np.prod(self.shape))
        text = f"{self.name} {self.shape}: "
        if not self.unwritten.any() and not self.shared.any():
            return text + f"each of the {size} elements written by exactly one thread."
        parts = []
        if self.unwritten.any():
            first = _index(np.argwhere(self.unwritten)[0])
            parts.append(
                f"{int(self.unwritten.sum())} of {size} elements never written "
                f"(first: {self.name}{first})"
            )
        if self.shared.any():
            where = tuple(np.argwhere(self.shared)[0])
            parts.append(
                f"{int(self.shared.sum())} written by more than one thread (first: "
                f"{self.name}{_index(where)}, by {int(self.writers[where])} threads)"
            )
        return text + "; ".join(parts) + "."


def _index(index) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


@dataclass(frozen=True)
class ThreadMap:
    """The result of :func:`thread_map`: one :class:`WriteMap` per array the kernel wrote to."""

    kernel: str
    griddim: Dim
    blockdim: Dim
    arrays: tuple[WriteMap, ...]
    error: str | None = None

    def __getitem__(self, name: str) -> WriteMap:
        for array in self.arrays:
            if array.name == name:
                return array
        raise KeyError(f"{name!r} was not written; written: {[a.name for a in self.arrays]}")

    def summary(self) -> str:
        launch = f"{self.kernel}[{_fmt_dim(self.griddim)}, {_fmt_dim(self.blockdim)}]"
        lines = [f"{launch}: {_threads(self.griddim, self.blockdim)} threads."]
        lines += [array.describe() for array in self.arrays]
        if self.error:
            lines.append(self.error[0].upper() + self.error[1:])
        elif not self.arrays:
            lines.append("The kernel wrote to none of its array arguments.")
        return "\n".join(lines)

    __repr__ = summary
    __str__ = summary

    def plot(self, *, max_annotated: int = 512):
        """Draw each written array; returns the matplotlib Figure (call ``plt.show()``)."""
        return _plot(self, max_annotated)


def _fmt_dim(dim: Dim) -> str:
    used = list(dim)
    while len(used) > 1 and used[-1] == 1:
        used.pop()
    return str(used[0]) if len(used) == 1 else "(" + ", ".join(map(str, used)) + ")"


def _used_axes(griddim: Dim, blockdim: Dim) -> int:
    """How many of x, y, z the launch uses (1 for a 1-D launch)."""
    return max([1] + [axis + 1 for axis in range(3) if griddim[axis] > 1 or blockdim[axis] > 1])


def _fmt_id(index: Dim, used: int) -> str:
    return str(index[0]) if used == 1 else "(" + ", ".join(map(str, index[:used])) + ")"


def _threads(griddim: Dim, blockdim: Dim) -> int:
    return math.prod(griddim) * math.prod(blockdim)


def _linear(dim: tuple[int, ...], extent: Dim) -> int:
    x, y, z = dim
    return x + extent[0] * (y + extent[1] * z)


def _write_map(name: str, position: int, shape, log: list[Write], griddim, blockdim) -> WriteMap:
    size = int(np.prod(shape))
    writes = np.zeros(size, dtype=np.int64)
    first = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)  # lowest global thread id
    per_element: list[set[int]] = [set() for _ in range(size)]
    for touched, block, thread in log:
        gid = _linear(block, griddim) * math.prod(blockdim) + _linear(thread, blockdim)
        np.add.at(writes, touched, 1)
        for index in touched:
            per_element[index].add(gid)
        first[touched] = np.minimum(first[touched], gid)
    block = np.full((size, 3), -1, dtype=np.int64)
    thread = np.full((size, 3), -1, dtype=np.int64)
    written = writes > 0
    per_block = math.prod(blockdim)
    block_id, thread_id = np.divmod(first[written], per_block)
    for out, ids, extent in ((block, block_id, griddim), (thread, thread_id, blockdim)):
        out[written, 0] = ids % extent[0]
        out[written, 1] = (ids // extent[0]) % extent[1]
        out[written, 2] = ids // (extent[0] * extent[1])
    writers = np.array([len(s) for s in per_element], dtype=np.int64)
    return WriteMap(
        name=name,
        position=position,
        shape=tuple(shape),
        writes=writes.reshape(shape),
        writers=writers.reshape(shape),
        block=block.reshape(*shape, 3),
        thread=thread.reshape(*shape, 3),
    )


def _argument_names(py_func, count: int) -> list[str]:
    try:
        names = list(inspect.signature(py_func).parameters)
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"argument {i}" for i in range(count)]


def thread_map(kernel, griddim, blockdim, *args, plot: bool = True) -> ThreadMap:
    """Launch ``kernel[griddim, blockdim](*args)`` on the simulator and show who wrote what.

    Returns a :class:`ThreadMap` (its text says what was never written or written twice); with
    ``plot=True`` it also draws the map. The kernel runs on copies of the arrays. An exception in
    the kernel (such as an index past the end) is reported in the map, not raised; as on a GPU,
    the other threads still run.
    """
    py_func = getattr(kernel, "py_func", None)
    if not callable(py_func):
        raise TypeError(
            f"thread_map needs a CUDA kernel (a function decorated with @cuda.jit), got "
            f"{type(kernel).__name__}; pass the kernel itself, not kernel[...] or kernel(...)."
        )
    grid, block = _dim3(griddim), _dim3(blockdim)
    if _threads(grid, block) > MAX_THREADS:
        raise ValueError(
            f"this launch has {_threads(grid, block):,} threads; thread_map simulates every one "
            f"(about 10,000 per second), so it accepts at most {MAX_THREADS:,}. Draw the map for a "
            "smaller problem: the pattern is the same."
        )
    host_args = tuple(_host_array(a) for a in args)
    if runtime.mode == "simulator":
        logs, error = _record(py_func, grid, block, host_args)
    else:
        logs, error = _record_in_simulator_process(py_func, grid, block, host_args)
    names = _argument_names(py_func, len(args))
    arrays = tuple(
        _write_map(names[position], position, shape, log, grid, block)
        for position, (shape, log) in logs.items()
        if log
    )
    result = ThreadMap(
        kernel=getattr(py_func, "__name__", "kernel"),
        griddim=grid,
        blockdim=block,
        arrays=arrays,
        error=error,
    )
    if plot and arrays:
        import matplotlib.pyplot as plt

        result.plot()
        plt.show()
    return result


# --- drawing ------------------------------------------------------------------------------------

_UNWRITTEN = (1.0, 1.0, 1.0)
_SHARED_FILL = (0.98, 0.78, 0.78)
_SHARED = "#b2182b"
_PADDING = (0.9, 0.9, 0.9)  # cells past the end of a 1-D array drawn in rows of _WRAP
_WRAP = 32  # a long 1-D array is drawn 32 elements (one warp's worth) per row


def _block_colours(count: int) -> np.ndarray:
    """Distinct colours for neighbouring blocks (cycled when there are many)."""
    from matplotlib import colormaps

    palette = colormaps["tab20"].colors
    order = list(range(0, 20, 2)) + list(range(1, 20, 2))  # strong colours first, then light
    return np.array([palette[order[i % 20]] for i in range(count)])


def _cells(write_map: WriteMap) -> np.ndarray:
    """The element shown in each cell of the picture (-1: padding past the end of a 1-D array)."""
    shape = write_map.shape
    if len(shape) == 2:
        return np.arange(shape[0] * shape[1]).reshape(shape)
    n = shape[0]
    cols = min(n, _WRAP)
    flat = np.full(-(-n // cols) * cols, -1)
    flat[:n] = np.arange(n)
    return flat.reshape(-1, cols)


def _cell_label(write_map: WriteMap, element: int, used: int) -> str:
    writers = int(write_map.writers.ravel()[element])
    if writers > 1:
        return f"×{writers}"
    thread = write_map.thread.reshape(-1, 3)[element]
    return str(thread[0]) if used == 1 else ",".join(str(t) for t in thread[:used])


def _draw_array(ax, result: ThreadMap, write_map: WriteMap, colours, max_annotated: int) -> None:
    cells = _cells(write_map)
    rows, cols = cells.shape
    used = _used_axes(result.griddim, result.blockdim)
    blocks = write_map.block.reshape(-1, 3)
    writes, writers = write_map.writes.ravel(), write_map.writers.ravel()
    image = np.empty((rows, cols, 3))
    annotate = rows * cols <= max_annotated
    for (r, c), element in np.ndenumerate(cells):
        if element < 0:
            image[r, c] = _PADDING
        elif writes[element] == 0:
            image[r, c] = _UNWRITTEN
        elif writers[element] > 1:
            image[r, c] = _SHARED_FILL
        else:
            image[r, c] = colours[_linear(tuple(blocks[element]), result.griddim)]
        if annotate and element >= 0 and writes[element] > 0:
            shared = writers[element] > 1
            ax.text(
                c,
                r,
                _cell_label(write_map, element, used),
                ha="center",
                va="center",
                fontsize=8 if used == 1 else 6.5,
                color=_SHARED if shared else "black",
                fontweight="bold" if shared else "normal",
            )
    ax.imshow(image, interpolation="nearest", aspect="equal")
    ax.set_xticks(np.arange(-0.5, cols, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, rows, 1), minor=True)
    ax.grid(which="minor", color="0.55", lw=0.6)
    ax.tick_params(which="minor", length=0)
    ax.set_xticks(range(0, cols, max(1, cols // 8)))
    row_ticks = list(range(0, rows, max(1, rows // 8)))
    ax.set_yticks(row_ticks)
    if len(write_map.shape) == 1:
        ax.set_yticklabels([str(r * cols) for r in row_ticks])
        ax.set_xlabel(f"element index{' (row start + column)' if rows > 1 else ''}", fontsize=8)
    else:
        ax.set_xlabel("column (second index)", fontsize=8)
        ax.set_ylabel("row (first index)", fontsize=8)
    ax.set_title(f"{write_map.name}, shape {write_map.shape}", fontsize=9)


def _legend(ax, result: ThreadMap, write_map: WriteMap, colours) -> None:
    from matplotlib.patches import Patch

    blocks = math.prod(result.griddim)
    used = _used_axes(result.griddim, result.blockdim)
    shown = min(blocks, 8)
    handles = [
        Patch(
            facecolor=colours[i], edgecolor="0.55", label=f"block {_block_label(i, result, used)}"
        )
        for i in range(shown)
    ]
    if blocks > shown:
        handles.append(Patch(facecolor="none", edgecolor="none", label=f"... {blocks} blocks"))
    handles.append(Patch(facecolor=_UNWRITTEN, edgecolor="0.55", label="never written"))
    handles.append(Patch(facecolor=_SHARED_FILL, edgecolor="0.55", label="×k: k threads wrote it"))
    if (_cells(write_map) < 0).any():  # the last row of a wrapped 1-D array is not full
        handles.append(
            Patch(facecolor=_PADDING, edgecolor="0.55", label="no element (past the end)")
        )
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, frameon=False
    )


def _block_label(linear: int, result: ThreadMap, used: int) -> str:
    gx, gy, _ = result.griddim
    index = (linear % gx, (linear // gx) % gy, linear // (gx * gy))
    return _fmt_id(index, used)


def _plot(result: ThreadMap, max_annotated: int):
    import matplotlib.pyplot as plt

    drawable = [a for a in result.arrays if len(a.shape) in (1, 2)]
    if not drawable:
        raise ValueError("thread_map draws 1-D and 2-D arrays; read the summary for the others")
    shapes = [_cells(a).shape for a in drawable]
    widest = max(c for _, c in shapes)
    cell = min(0.38, 10.5 / widest)  # inches per element, so that the figure stays within 13 in
    width = max(4.5, cell * widest + 2.5)
    heights = [max(0.8, cell * r + 0.7) for r, _ in shapes]
    fig, axes = plt.subplots(
        len(drawable),
        1,
        figsize=(width, sum(heights) + 0.5),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        layout="constrained",
    )
    colours = _block_colours(math.prod(result.griddim))
    for ax, write_map in zip(axes[:, 0], drawable, strict=True):
        _draw_array(ax, result, write_map, colours, max_annotated)
        _legend(ax, result, write_map, colours)
    used = _used_axes(result.griddim, result.blockdim)
    number = "threadIdx.x" if used == 1 else "threadIdx " + ",".join("xyz"[:used])
    heading = (
        f"{result.kernel}[{_fmt_dim(result.griddim)}, {_fmt_dim(result.blockdim)}]: who wrote each "
        f"element\ncolour = the writer's block, number = its {number}"
    )
    if result.error:
        heading += "; some threads failed (see the summary)"
    fig.suptitle(heading, fontsize=9)
    return fig


# --- transfers (gu.transfers) ---------------------------------------------------------------


def _serve(request: str, answer: str) -> None:
    """Entry point of the simulator process started by :func:`_record_in_simulator_process`."""
    payload, griddim, blockdim, args = pickle.loads(Path(request).read_bytes())
    py_func = pickle.loads(payload)
    Path(answer).write_bytes(pickle.dumps(_record(py_func, griddim, blockdim, args)))


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2])
