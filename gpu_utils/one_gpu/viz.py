"""Who wrote which element of a kernel's output (chapter 03).

``thread_map(kernel, griddim, blockdim, *args)`` launches the kernel once on a CUDA simulator (as
``gu.trace`` does) and records, for every element of every array argument, which (block, thread) wrote it. It then
draws each array the kernel wrote to, coloured by the writer's block and annotated with the
writer's thread index, with unwritten elements left blank and elements written by more than one
thread marked in red: a wrong index shows up as a wrong pattern at a glance.

It always runs on the simulator, because only there can every single store be observed, and in
this process in either mode: it runs the kernel through the engine of :mod:`gpu_utils.one_gpu.trace`
(:mod:`gpu_utils.sim._trace_run`), which swaps in its own simulated ``cuda`` module and logs every
element access of every thread, atomics included. Only stores to the array arguments count here.
The engine's ``keep_going`` option lets every other thread run on when one raises, as on a GPU,
so the report on failing threads does not depend on which one ran first. The learner's arrays are
never modified: the kernel runs on copies. Launches are limited to :data:`MAX_THREADS` threads, as
the simulator runs about ten thousand threads per second.

``Table(columns, rows)`` (chapters 09-11) shows a result table as HTML in JupyterLab, where a long
line of plain text would wrap in the middle of a word, and as aligned plain text everywhere else
(the stored outputs that nbval compares, a terminal).
"""

from __future__ import annotations

import html
import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..sim import _trace_run as engine

__all__ = [
    "MAX_THREADS",
    "Table",
    "ThreadMap",
    "WriteMap",
    "thread_map",
]

#: The largest launch thread_map accepts: about one to two seconds on the simulator.
MAX_THREADS = 16_384

Dim = tuple[int, int, int]
Failure = tuple[Dim, Dim, str, str]  # blockIdx, threadIdx, exception type, message


# --- recording ----------------------------------------------------------------------------------


def _dim3(dim: int | tuple[int, ...]) -> Dim:
    dims = (dim,) if isinstance(dim, int | np.integer) else tuple(dim)
    if not 1 <= len(dims) <= 3 or any(int(d) < 1 for d in dims):
        raise ValueError(
            f"launch dimension {dim!r}: use a positive int or a tuple of 1 to 3 positive ints"
        )
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


def _launch_copy(arg: object) -> object:
    """A C-ordered NumPy copy of an array argument (device arrays via the host); scalars as is."""
    if hasattr(arg, "copy_to_host"):
        arg = arg.copy_to_host()
    return np.array(arg, order="C") if isinstance(arg, np.ndarray) else arg


def _record(py_func, griddim: Dim, blockdim: Dim, args: tuple) -> tuple[dict, list[Failure]]:
    """Run the kernel on copies of ``args`` through the trace engine, in this process.

    Returns, per array argument's position, its shape and its stores as an (n, 2) array of (flat
    element index, global thread id); and the failures of the threads that raised.
    """
    copies = [_launch_copy(a) for a in args]
    # the engine wraps each array of more than 0 dimensions; copies never share memory, so each
    # is its own allocation ("root"), numbered in argument order
    positions = [k for k, a in enumerate(copies) if isinstance(a, np.ndarray) and a.ndim > 0]
    stores: dict[int, list[tuple[int, int]]] = {k: [] for k in positions}
    failures: list[Failure] = []
    per_block = math.prod(blockdim)

    def on_block(block_index, threads) -> None:
        for thread in threads:
            block, index = tuple(thread.blockIdx), tuple(thread.threadIdx)
            gid = _linear(block, griddim) * per_block + thread.thread_id
            for r in thread.records:
                if r[engine.KIND] == engine.STORE and r[engine.SPACE] == engine.GLOBAL:
                    position = positions[r[engine.ROOT]]
                    size = copies[position].itemsize
                    start, end = r[engine.OFFSET], r[engine.OFFSET] + r[engine.NBYTES]
                    stores[position] += [
                        (e, gid) for e in range(start // size, (end - 1) // size + 1)
                    ]
            if thread.failure is not None:
                error = thread.failure
                first = (str(error).strip().splitlines() or [""])[0]
                failures.append((block, index, type(error).__name__, first))

    engine.run(
        py_func,
        griddim,
        blockdim,
        copies,
        recorder=engine.Recorder(),
        on_block=on_block,
        divergence=False,
        keep_going=True,
    )
    logs = {
        k: (copies[k].shape, np.array(pairs, dtype=np.int64).reshape(-1, 2))
        for k, pairs in stores.items()
    }
    return logs, failures


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


def _write_map(name: str, position: int, shape, stores: np.ndarray, griddim, blockdim) -> WriteMap:
    """``stores``: one row (flat element index, global thread id) per element stored."""
    size = math.prod(shape)
    writes = np.bincount(stores[:, 0], minlength=size)
    writers = np.bincount(np.unique(stores, axis=0)[:, 0], minlength=size)
    first = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)  # lowest global thread id
    np.minimum.at(first, stores[:, 0], stores[:, 1])
    block = np.full((size, 3), -1, dtype=np.int64)
    thread = np.full((size, 3), -1, dtype=np.int64)
    written = writes > 0
    per_block = math.prod(blockdim)
    block_id, thread_id = np.divmod(first[written], per_block)
    for out, ids, extent in ((block, block_id, griddim), (thread, thread_id, blockdim)):
        out[written, 0] = ids % extent[0]
        out[written, 1] = (ids // extent[0]) % extent[1]
        out[written, 2] = ids // (extent[0] * extent[1])
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
    logs, failures = _record(py_func, grid, block, args)
    names = _argument_names(py_func, len(args))
    arrays = tuple(
        _write_map(names[position], position, shape, stores, grid, block)
        for position, (shape, stores) in logs.items()
        if len(stores)
    )
    result = ThreadMap(
        kernel=getattr(py_func, "__name__", "kernel"),
        griddim=grid,
        blockdim=block,
        arrays=arrays,
        error=_explain(failures, grid, block),
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


def _stacked_panels(
    shapes, *, min_width=4.5, margin=2.5, min_height=0.8, pad=0.7, title=0.5
) -> tuple:
    """A figure of one panel per (rows, columns) grid of cells, stacked, all cells the same size
    (at most 0.38 in, so that the widest panel stays within about 13 in); ``min_width``,
    ``margin``, ``min_height``, ``pad`` and ``title`` (inches) leave room for labels. Used by
    :func:`thread_map` and ``gu.triton_accesses``' ``draw``. Returns (figure, axes column)."""
    import matplotlib.pyplot as plt

    widest = max(c for _, c in shapes)
    cell = min(0.38, 10.5 / widest)  # inches per element
    width = max(min_width, cell * widest + margin)
    heights = [max(min_height, cell * r + pad) for r, _ in shapes]
    fig, axes = plt.subplots(
        len(shapes),
        1,
        figsize=(width, sum(heights) + title),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        layout="constrained",
    )
    return fig, axes


def _plot(result: ThreadMap, max_annotated: int):
    drawable = [a for a in result.arrays if len(a.shape) in (1, 2)]
    if not drawable:
        raise ValueError("thread_map draws 1-D and 2-D arrays; read the summary for the others")
    fig, axes = _stacked_panels([_cells(a).shape for a in drawable])
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


# --- result tables (chapters 09-11) --------------------------------------------------------------


def _cell_text(value: object) -> str:
    if isinstance(value, float | np.floating):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _is_number(value: object) -> bool:
    """Python or NumPy ints and floats (np.float32, np.int64 ...), not booleans."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_
    )


class Table:
    """A table of results: HTML in a notebook (cells wrap between words, never inside one), aligned
    plain text in ``str()``, ``repr()`` and the notebook's ``text/plain`` output.

    ``columns`` are the headers; each row has one value per column (numbers are right-aligned;
    format them yourself as strings to control their digits). ``caption`` goes above the table,
    ``note`` below it.
    """

    def __init__(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[object]],
        caption: str = "",
        note: str = "",
    ) -> None:
        self.columns = [str(c) for c in columns]
        self.rows = [list(r) for r in rows]
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(
                    f"each row needs {len(self.columns)} values ({', '.join(self.columns)}), "
                    f"got {len(row)}: {row!r}"
                )
        self.caption, self.note = caption, note

    def _numeric(self, j: int) -> bool:
        values = [r[j] for r in self.rows]
        return bool(values) and all(_is_number(v) for v in values)

    def __str__(self) -> str:
        cells = [[_cell_text(v) for v in row] for row in self.rows]
        widths = [
            max([len(c)] + [len(row[j]) for row in cells]) for j, c in enumerate(self.columns)
        ]
        right = [self._numeric(j) for j in range(len(self.columns))]

        def line(values):
            parts = [
                v.rjust(w) if r else v.ljust(w)
                for v, w, r in zip(values, widths, right, strict=True)
            ]
            return "  ".join(parts).rstrip()

        lines = [self.caption] if self.caption else []
        lines += [line(self.columns), line(["-" * w for w in widths])]
        lines += [line(row) for row in cells]
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        right = [self._numeric(j) for j in range(len(self.columns))]
        cell = "padding: 1px 8px; word-break: normal; overflow-wrap: normal; text-align: {}"

        def row(values, tag):
            return (
                "<tr>"
                + "".join(
                    f"<{tag} style='{cell.format('right' if r else 'left')}'>"
                    f"{html.escape(_cell_text(v))}</{tag}>"
                    for v, r in zip(values, right, strict=True)
                )
                + "</tr>"
            )

        caption = (
            f"<caption style='caption-side: top; text-align: left'>{html.escape(self.caption)}"
            "</caption>"
            if self.caption
            else ""
        )
        body = "".join(row(r, "td") for r in self.rows)
        note = f"<div>{html.escape(self.note)}</div>" if self.note else ""
        return (
            f"<table style='border-collapse: collapse'>{caption}"
            f"<thead>{row(self.columns, 'th')}</thead><tbody>{body}</tbody></table>{note}"
        )
