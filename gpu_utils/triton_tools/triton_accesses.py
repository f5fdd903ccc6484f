"""Which Triton program loaded and stored which elements (chapter 12).

``gu.triton_accesses(kernel, grid, *args, **meta)`` launches ``kernel[grid](*args, **meta)`` once
in Triton's interpreter and records every ``tl.load``, ``tl.store`` and atomic of every program:
the program id (x, y, z), the tensor it touched (matched to the launch's tensor arguments by
address and named by the kernel's parameter), the element indices (row and column of a 2-D
tensor, from its strides, so a strided view is read correctly), the lanes that were active and
those the mask turned off, and the kernel's line. The record (:class:`TritonAccesses`) answers
questions (``elements``, ``unwritten``, ``double_writes``), prints a table (``summary``) and
draws each tensor coloured by the program that touched each element (``draw``): elements nobody
wrote are left blank, elements that two programs stored to are marked in red (on a GPU the
programs run at the same time, so which value remains is a race, which the interpreter, running
programs one after another, cannot show), and the masked lanes of a 1-D block that point past
the tensor's end are hatched. It is chapter 03's :func:`gpu_utils.one_gpu.viz.thread_map` for Triton,
and the picture Triton-Puzzles draws with triton-viz.

The kernel runs on copies of the tensors unless ``on_copies=False`` (then on the tensors given,
as a plain launch would). Each access first goes through the course's launch guard
(:func:`gpu_utils.runtime.patch_triton_launch`): an access outside the launch's tensors raises
:class:`gpu_utils.runtime.LaunchOutOfBounds` with the tensor, the offsets, the program and the
line, and the accesses recorded until then travel with it (``error.accesses``).

Only the interpreter can observe each access, so this runs only in simulator mode
(``GPU_COURSE_MODE=simulator``); on a GPU it says so and what to do.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
import textwrap
import types
from dataclasses import dataclass, field

import numpy as np

from .. import runtime
from ..exercises._triton import (
    _access_at,
    _accesses,
    _copy,
    _is_tensor,
    _learner_line,
    _line_spans,
    _provenance,
    _Span,
    _spans,
)
from ..one_gpu.viz import (
    _PADDING,
    _SHARED,
    _SHARED_FILL,
    _UNWRITTEN,
    _WRAP,
    Table,
    _block_colours,
    _fmt_dim,
    _fmt_id,
    _index,
    _linear,
    _stacked_panels,
    _used_axes,
)

__all__ = ["Access", "TritonAccesses", "triton_accesses"]

Program = tuple[int, int, int]
KINDS = ("load", "store", "atomic")
_VERB = {"load": "loaded", "store": "stored", "atomic": "updated atomically"}
_SEVERAL_READERS = (0.78, 0.78, 0.78)  # an element that several programs loaded (no race)


@dataclass(frozen=True)
class Access:
    """One ``tl.load``/``tl.store``/atomic of one program into one tensor.

    ``index`` holds one row per active lane: the element's index in the tensor (``(row, col)``
    for a 2-D tensor); ``lanes`` the lanes' positions in the flattened block, in the same order;
    ``masked`` counts the lanes the mask turned off and ``masked_offsets`` gives the element
    offsets (from the tensor's first element) they pointed at, inside the tensor or not (empty
    when ``tensor`` is None: a fully masked access whose pointer could not be traced to one
    tensor)."""

    kind: str
    program: Program
    tensor: str | None
    line: int | None
    source: str
    block: tuple[int, ...]
    lanes: np.ndarray
    index: np.ndarray
    masked: int
    masked_offsets: np.ndarray


@dataclass
class TritonAccesses:
    """The record of one launch: see :func:`triton_accesses`."""

    kernel: str
    grid: Program
    tensors: dict[str, _Span]
    accesses: list[Access] = field(default_factory=list)
    on_copies: bool = True
    args: dict[str, object] = field(default_factory=dict)

    # --- questions ----------------------------------------------------------------------------

    def name(self, tensor: str) -> str:
        """The parameter name of ``tensor`` (``"x"`` finds ``x_ptr``)."""
        for candidate in (tensor, f"{tensor}_ptr"):
            if candidate in self.tensors:
                return candidate
        raise KeyError(
            f"{self.kernel} has no tensor argument {tensor!r}; its tensors are "
            f"{', '.join(map(repr, self.tensors)) or 'none'}."
        )

    def shape(self, tensor: str) -> tuple[int, ...]:
        return self.tensors[self.name(tensor)].sizes or (1,)

    def _selected(self, tensor: str, kinds, program=None) -> list[Access]:
        name = self.name(tensor)
        wanted = None if program is None else _program(program)
        return [
            a
            for a in self.accesses
            if a.tensor == name and a.kind in kinds and (wanted is None or a.program == wanted)
        ]

    def _pairs(self, tensor: str, kinds) -> np.ndarray:
        return self._pairs_of(tensor, self._selected(tensor, kinds))

    def _pairs_of(self, tensor: str, accesses: list[Access]) -> np.ndarray:
        """(flat element, linear program id) per active lane of ``accesses``."""
        shape = self.shape(tensor)
        chunks = [
            np.stack(
                [
                    np.ravel_multi_index(a.index.T, shape) if a.index.shape[1] else a.lanes * 0,
                    np.full(a.lanes.size, _linear(a.program, self.grid)),
                ],
                axis=1,
            )
            for a in accesses
        ]
        return np.concatenate(chunks) if chunks else np.empty((0, 2), dtype=np.int64)

    def elements(self, tensor: str, kind: str = "store", program=None) -> set:
        """The elements of ``tensor`` that ``kind`` ("load", "store", "atomic", or "write": a
        store or an atomic) touched, by any program or by ``program`` (an int or an (x, y, z)
        tuple): ints for a 1-D tensor, index tuples otherwise."""
        kinds = _kinds(kind)
        rows = [a.index for a in self._selected(tensor, kinds, program)]
        if not rows:
            return set()
        index = np.unique(np.concatenate(rows), axis=0)
        if index.shape[1] <= 1:
            return {int(i) for i in index.reshape(-1)} if index.shape[1] else {0}
        return {tuple(int(v) for v in row) for row in index}

    def count(self, tensor: str, kind: str = "store") -> np.ndarray:
        """How many lanes touched each element of ``tensor`` (array of the tensor's shape)."""
        shape = self.shape(tensor)
        pairs = self._pairs(tensor, _kinds(kind))
        return np.bincount(pairs[:, 0], minlength=math.prod(shape)).reshape(shape)

    def programs_at(self, tensor: str, kind: str = "store") -> np.ndarray:
        """How many different programs touched each element of ``tensor``."""
        shape = self.shape(tensor)
        pairs = np.unique(self._pairs(tensor, _kinds(kind)), axis=0)
        return np.bincount(pairs[:, 0], minlength=math.prod(shape)).reshape(shape)

    def unwritten(self, tensor: str) -> np.ndarray:
        """Elements no store or atomic reached (True where nothing was written)."""
        return self.count(tensor, "write") == 0

    def double_writes(self, tensor: str) -> np.ndarray:
        """Elements that two or more programs stored to (atomics excluded): a race on a GPU."""
        return self.programs_at(tensor, "store") > 1

    def masked(self, program=None) -> int:
        """How many lanes the masks turned off, in all or in ``program``'s accesses."""
        wanted = None if program is None else _program(program)
        return sum(a.masked for a in self.accesses if wanted in (None, a.program))

    def programs(self) -> list[Program]:
        """Every program of the grid, in launch order."""
        gx, gy, gz = self.grid
        return [(x, y, z) for x in range(gx) for y in range(gy) for z in range(gz)]

    # --- text -----------------------------------------------------------------------------------

    def _used(self) -> int:
        return _used_axes(self.grid, (1, 1, 1))

    def _columns(self) -> list[tuple[str, str]]:
        present = {(a.tensor, a.kind) for a in self.accesses if a.tensor is not None}
        return [(t, k) for t in self.tensors for k in KINDS if (t, k) in present]

    def describe(self, tensor: str) -> str:
        """One sentence on ``tensor``: never written, written by two programs, or neither."""
        name = self.name(tensor)
        shape = self.shape(name)
        size = math.prod(shape)
        writes = self.count(name, "write")
        if not writes.any():
            loads = self.programs_at(name, "load")
            return (
                f"{name} {shape}: loaded, not written ({int((loads > 0).sum())} of {size} loaded)."
            )
        parts = []
        unwritten = writes == 0
        if unwritten.any():
            first = _index(np.argwhere(unwritten)[0])
            parts.append(
                f"{int(unwritten.sum())} of {size} elements never written (first: {name}{first})"
            )
        double = self.double_writes(name)
        if double.any():
            where = tuple(int(i) for i in np.argwhere(double)[0])
            writers = sorted(
                {
                    _fmt_id(a.program, self._used())
                    for a in self._selected(name, ("store",))
                    if (a.index == np.array(where[: a.index.shape[1]])).all(axis=1).any()
                }
            )
            parts.append(
                f"{int(double.sum())} stored by more than one program (first: {name}"
                f"{_index(where)}, by programs {', '.join(writers)}): on a GPU they run at the "
                "same time, a race"
            )
        if not parts:
            return f"{name} {shape}: each of the {size} elements written by exactly one program."
        return f"{name} {shape}: " + "; ".join(parts) + "."

    def summary(self, max_programs: int = 16) -> Table:
        """A table: per program, the elements each tensor had loaded or stored and the masked
        lanes (HTML in a notebook, aligned text in ``print``)."""
        columns = self._columns()
        used = self._used()
        headers = ["program"] + [f"{t} {_VERB[k].split()[0]}" for t, k in columns]
        headers.append("masked lanes")
        rows = []
        programs = self.programs()
        for program in programs[:max_programs]:
            row: list[object] = [_fmt_id(program, used)]
            for tensor, kind in columns:
                index = [a.index for a in self._selected(tensor, (kind,), program)]
                row.append(_extent(np.concatenate(index)) if index else "-")
            row.append(self.masked(program))
            rows.append(row)
        note = []
        if len(programs) > max_programs:
            note.append(f"... and {len(programs) - max_programs} more programs.")
        note += [
            self.describe(t) for t in self.tensors if any(a.tensor == t for a in self.accesses)
        ]
        where = "copies of the tensors" if self.on_copies else "the tensors given"
        caption = (
            f"{self.kernel}[{_fmt_dim(self.grid)}] in Triton's interpreter, {len(programs)} "
            f"programs, on {where}.\nEach cell: the elements the program touched [their "
            "indices]; masked lanes: summed over its accesses."
        )
        note = [textwrap.fill(line, 100, subsequent_indent="  ") for line in note]
        return Table(headers, rows, caption=caption, note="\n".join(note))

    def __repr__(self) -> str:
        return str(self.summary())

    def _repr_html_(self) -> str:
        return self.summary()._repr_html_()

    # --- picture --------------------------------------------------------------------------------

    def draw(
        self,
        tensor: str | None = None,
        kind: str | None = None,
        program=None,
        max_annotated: int = 512,
    ):
        """Draw ``tensor`` (or every tensor the kernel touched), each element coloured by the
        program that ``kind`` ("load", "store", "atomic"; default: "store" for a tensor written
        to, else "load") touched it with and numbered with that program's id. With ``program``
        (an int or an (x, y, z) tuple), only that program's accesses, each element numbered with
        the lane that touched it (its position in the block). Returns the matplotlib Figure
        (``plt.show()`` shows it)."""
        wanted = None if program is None else _program(program)
        touched = [t for t in self.tensors if any(a.tensor == t for a in self.accesses)]
        names = [self.name(tensor)] if tensor is not None else touched
        if not names:
            raise ValueError(f"{self.kernel} loaded and stored nothing: there is nothing to draw.")
        panels = []
        for name in names:
            if len(self.shape(name)) > 2:
                raise ValueError(
                    f"{name} has {len(self.shape(name))} dimensions; draw() shows 1-D and 2-D "
                    "tensors: read summary() or elements() for it."
                )
            chosen = kind or ("store" if self.count(name, "write").any() else "load")
            accesses = self._selected(name, _kinds(chosen), wanted)
            panels.append((name, chosen, accesses, self._cells(name, accesses)))
        fig, axes = _stacked_panels(
            [p[3].shape for p in panels],
            min_width=5.5,
            margin=3.0,
            min_height=0.9,
            pad=0.8,
            title=0.6,
        )
        colours = _block_colours(math.prod(self.grid))
        for ax, (name, chosen, accesses, cells) in zip(axes[:, 0], panels, strict=True):
            self._draw_tensor(ax, name, chosen, accesses, cells, colours, wanted, max_annotated)
        used = self._used()
        number = "its id" if used == 1 else "its (" + ", ".join("xyz"[:used]) + ")"
        if wanted is None:
            heading = "which program touched each element\ncolour and number = the program, "
            heading += number
        else:
            heading = f"the elements program {_fmt_id(wanted, used)} touched\nnumber = the lane"
            heading += " (its position in the block)"
        fig.suptitle(f"{self.kernel}[{_fmt_dim(self.grid)}]: {heading}", fontsize=9)
        return fig

    def _cells(self, name: str, accesses: list[Access]) -> np.ndarray:
        """The element offset shown in each cell (-1: padding). A 1-D tensor is drawn 32
        elements a row and extended past its end to the masked lanes that point there."""
        shape = self.shape(name)
        if len(shape) == 2:
            return np.arange(shape[0] * shape[1]).reshape(shape)
        n = shape[0]
        past = [a.masked_offsets for a in accesses if a.masked_offsets.size]
        last = int(max([n - 1] + [int(p.max()) for p in past]))
        last = min(last, n - 1 + 4 * _WRAP)  # a few rows of masked lanes are enough to see
        cols = min(last + 1, _WRAP)
        flat = np.full(-(-(last + 1) // cols) * cols, -1)
        flat[: last + 1] = np.arange(last + 1)
        return flat.reshape(-1, cols)

    def _draw_tensor(
        self, ax, name, chosen, accesses, cells, colours, wanted, max_annotated
    ) -> None:
        shape = self.shape(name)
        size = math.prod(shape)
        used = self._used()
        pairs = np.unique(self._pairs_of(name, accesses), axis=0)
        readers = np.bincount(pairs[:, 0], minlength=size)
        first = np.full(size, -1)
        for element, program in pairs[::-1]:  # the lowest program id of each element
            first[element] = program
        lane: dict[int, str] = {}  # with one program: element -> the first lane that touched it
        masked_past: dict[int, int] = {}  # element past the end -> the first program there
        for a in accesses:
            if wanted is not None:
                flat = np.ravel_multi_index(a.index.T, shape) if a.index.shape[1] else a.lanes * 0
                for element, position in zip(flat.tolist(), a.lanes.tolist(), strict=True):
                    where = np.unravel_index(position, a.block) if len(a.block) > 1 else position
                    lane.setdefault(element, _fmt_id(tuple(np.atleast_1d(where)), len(a.block)))
            if len(shape) == 1:
                for offset in a.masked_offsets[a.masked_offsets >= size]:
                    masked_past.setdefault(int(offset), _linear(a.program, self.grid))
        rows, cols = cells.shape
        image = np.empty((rows, cols, 3))
        annotate = rows * cols <= max_annotated
        race = chosen == "store" and wanted is None
        for (r, c), element in np.ndenumerate(cells):
            label, colour = "", "black"
            if element >= size and element in masked_past:
                image[r, c] = 0.55 + 0.45 * colours[masked_past[element]]  # paler, hatched
                ax.add_patch(_hatch(c, r))
            elif element >= size or element < 0:
                image[r, c] = _PADDING
            elif readers[element] == 0:
                image[r, c] = _UNWRITTEN
            elif readers[element] > 1:
                image[r, c] = _SHARED_FILL if race else _SEVERAL_READERS
                label, colour = f"×{readers[element]}", _SHARED if race else "black"
            else:
                image[r, c] = colours[first[element]]
                label = lane[element] if wanted is not None else ""
                label = label or _fmt_id(_unlinear(first[element], self.grid), used)
            if annotate and label:
                bold = "bold" if colour == _SHARED else "normal"
                points = 8 if len(label) <= 3 else 6.5
                ax.text(c, r, label, ha="center", va="center", fontsize=points, color=colour,
                        fontweight=bold)  # fmt: skip
        ax.imshow(image, interpolation="nearest", aspect="equal")
        ax.set_xticks(np.arange(-0.5, cols, 1), minor=True)
        ax.set_yticks(np.arange(-0.5, rows, 1), minor=True)
        ax.grid(which="minor", color="0.55", lw=0.6)
        ax.tick_params(which="minor", length=0)
        ax.set_xticks(range(0, cols, max(1, cols // 8)))
        row_ticks = list(range(0, rows, max(1, rows // 8)))
        ax.set_yticks(row_ticks)
        if len(shape) == 1:
            ax.set_yticklabels([str(r * cols) for r in row_ticks])
            ax.set_xlabel(f"element index{' (row start + column)' if rows > 1 else ''}", fontsize=8)
        else:
            ax.set_xlabel("column (second index)", fontsize=8)
            ax.set_ylabel("row (first index)", fontsize=8)
        masked = sum(a.masked for a in accesses)
        ax.set_title(
            f"{name}, shape {tuple(shape)}: {_VERB[chosen]}; {masked} masked lanes", fontsize=9
        )
        padded = any(e < 0 or (e >= size and e not in masked_past) for e in cells.ravel())
        self._legend(ax, chosen, bool(masked_past), padded, wanted)

    def _legend(self, ax, chosen: str, hatched: bool, padded: bool, wanted) -> None:
        from matplotlib.patches import Patch

        colours = _block_colours(math.prod(self.grid))
        programs = self.programs() if wanted is None else [wanted]
        shown = min(len(programs), 8)
        programs = sorted(programs, key=lambda p: _linear(p, self.grid))  # colour order
        handles = [
            Patch(
                facecolor=colours[_linear(p, self.grid)],
                edgecolor="0.55",
                label=f"program {_fmt_id(p, self._used())}",
            )
            for p in programs[:shown]
        ]
        if len(programs) > shown:
            handles.append(
                Patch(facecolor="none", edgecolor="none", label=f"... {len(programs)} programs")
            )
        nobody = "never written" if chosen != "load" else "never loaded"
        nobody = nobody if wanted is None else "not touched by this program"
        handles.append(Patch(facecolor=_UNWRITTEN, edgecolor="0.55", label=nobody))
        if chosen == "store" and wanted is None:
            handles.append(
                Patch(facecolor=_SHARED_FILL, edgecolor="0.55", label="×k: k programs (a race)")
            )
        elif wanted is None:
            handles.append(
                Patch(facecolor=_SEVERAL_READERS, edgecolor="0.55", label="×k: k programs")
            )
        if hatched:
            handles.append(
                Patch(facecolor="white", edgecolor="0.3", hatch="///", label="masked lane")
            )
        if padded:
            handles.append(Patch(facecolor=_PADDING, edgecolor="0.55", label="past the end"))
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, frameon=False
        )


def _hatch(c: int, r: int):
    from matplotlib.patches import Rectangle

    return Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, hatch="///", edgecolor="0.3", lw=0)


def _kinds(kind: str) -> tuple[str, ...]:
    if kind == "write":
        return ("store", "atomic")
    if kind not in KINDS:
        raise ValueError(
            f"kind {kind!r}: use one of {', '.join(map(repr, KINDS))} or 'write' (store or atomic)."
        )
    return (kind,)


def _program(program) -> Program:
    ids = (program,) if isinstance(program, int | np.integer) else tuple(program)
    if not 1 <= len(ids) <= 3:
        raise ValueError(f"program {program!r}: use an int or a tuple (x, y, z) of 1 to 3 ints.")
    return tuple(int(i) for i in ids) + (0,) * (3 - len(ids))


def _unlinear(linear: int, grid: Program) -> Program:
    gx, gy, _ = grid
    return (int(linear % gx), int((linear // gx) % gy), int(linear // (gx * gy)))


def _extent(index: np.ndarray) -> str:
    """``count [start:stop, ...]``, the index range, when the elements fill it; else the count."""
    index = np.unique(index, axis=0)
    if index.shape[1] == 0:
        return "1"
    low, high = index.min(axis=0), index.max(axis=0)
    box = int(np.prod(high - low + 1))
    if box != len(index):
        return f"{len(index)}"
    parts = [str(lo) if lo == hi else f"{lo}:{hi + 1}" for lo, hi in zip(low, high, strict=True)]
    return f"{len(index)} [{', '.join(parts)}]"


def _unravel(span: _Span, offsets: np.ndarray) -> np.ndarray:
    """Element offsets (from the tensor's first element) to indices, from the strides."""
    ndim = len(span.sizes)
    index = np.zeros((offsets.size, ndim), dtype=np.int64)
    rest = offsets.astype(np.int64)
    for d in sorted(range(ndim), key=lambda d: -span.strides[d]):
        if span.strides[d] == 0 or span.sizes[d] == 1:
            continue
        index[:, d] = rest // span.strides[d]
        rest = rest - index[:, d] * span.strides[d]
    return index


# --- recording ----------------------------------------------------------------------------------


class _Recorder:
    """Records each access the interpreter's builder makes, after the launch guard checked it."""

    NAMES = ("create_masked_load", "create_masked_store", "create_atomic_rmw", "create_atomic_cas")

    def __init__(self, record: TritonAccesses, function) -> None:
        self.record = record
        self.spans = list(record.tensors.values())
        self.filename = function.__code__.co_filename
        self.derived = _provenance(function, set(record.tensors))
        self.calls = _accesses(function)

    def add(self, builder, kind: str, ptrs, mask) -> None:
        addresses = np.asarray(ptrs.data).astype(np.uint64)
        block = addresses.shape
        addresses = addresses.reshape(-1)
        if mask is None:
            active = np.ones(addresses.shape, dtype=bool)
        else:
            active = np.broadcast_to(np.asarray(mask.data, dtype=bool), block).reshape(-1)
        itemsize = ptrs.get_element_ty().primitive_bitwidth // 8
        line, source = _learner_line(self.filename)
        program = tuple(int(i) for i in builder.grid_idx)
        lanes = np.flatnonzero(active)
        left = np.ones(lanes.size, dtype=bool)
        found = []
        for span in self.spans:
            inside = left & span.contains(addresses[lanes], itemsize)
            if inside.any():
                found.append((span, lanes[inside]))
                left &= ~inside
        if left.any():  # only when the guard is off: outside every tensor
            found.append((None, lanes[left]))
        masked_lanes = np.flatnonzero(~active)
        if found:
            owner = max(found, key=lambda f: f[1].size)[0]
        else:
            call = _access_at(self.calls, line, "load" if kind == "load" else "store")
            spans = _line_spans(self.spans, self.derived, self.filename, call)
            owner = spans[0] if len(spans) == 1 else None
            found = [(owner, lanes)]
        for span, mine in found:
            mask_here = masked_lanes if span is owner else masked_lanes[:0]
            if span is None:
                index = np.empty((mine.size, 0), dtype=np.int64)
                masked = np.empty(0, dtype=np.int64)
            else:
                index = _unravel(span, span.element_offsets(addresses[mine]))
                masked = span.element_offsets(addresses[mask_here])
            self.record.accesses.append(
                Access(
                    kind,
                    program,
                    None if span is None else span.name,
                    line,
                    source,
                    tuple(block),
                    mine,
                    index,
                    int(mask_here.size),
                    np.asarray(masked, dtype=np.int64),
                )
            )

    def install(self, builder_class) -> dict:
        originals = {name: builder_class.__dict__[name] for name in self.NAMES}
        load, store = originals["create_masked_load"], originals["create_masked_store"]
        rmw, cas = originals["create_atomic_rmw"], originals["create_atomic_cas"]
        recorder = self

        def create_masked_load(self, ptrs, mask, *rest):
            recorder.add(self, "load", ptrs, mask)
            return load(self, ptrs, mask, *rest)

        def create_masked_store(self, ptrs, value, mask, *rest):
            recorder.add(self, "store", ptrs, mask)
            return store(self, ptrs, value, mask, *rest)

        def create_atomic_rmw(self, op, ptr, val, mask, *rest):
            recorder.add(self, "atomic", ptr, mask)
            return rmw(self, op, ptr, val, mask, *rest)

        def create_atomic_cas(self, ptr, *rest):
            recorder.add(self, "atomic", ptr, None)
            return cas(self, ptr, *rest)

        for name, function in zip(
            self.NAMES,
            (create_masked_load, create_masked_store, create_atomic_rmw, create_atomic_cas),
            strict=True,
        ):
            setattr(builder_class, name, function)
        return originals


_NEEDS_INTERPRETER = (
    "gu.triton_accesses records each load and store as Triton's interpreter runs them, and the "
    "interpreter runs only in simulator mode; {why}. To draw the picture, set "
    "GPU_COURSE_MODE=simulator before starting JupyterLab (or run `%env GPU_COURSE_MODE=simulator` "
    "first in a fresh kernel, before `import gpu_utils`), run the notebook's cells again and call "
    "it there; on this GPU, check the kernel with gu.exercises.check or against torch instead."
)


def _interpreted(kernel) -> types.FunctionType:
    """The Python function of an interpreted ``@triton.jit`` kernel, or a clear error."""
    if type(kernel).__name__ in ("Autotuner", "Heuristics"):
        raise TypeError(
            "this kernel is wrapped in triton.autotune or triton.heuristics; pass the kernel "
            "under it (`kernel.fn`) and one config's meta-parameters (e.g. BLOCK_SIZE=128)."
        )
    function = getattr(kernel, "fn", None)
    if not (callable(getattr(kernel, "run", None)) and inspect.isfunction(function)):
        raise TypeError(
            f"gu.triton_accesses needs a Triton kernel (a function decorated with @triton.jit), "
            f"got {type(kernel).__name__}; pass the kernel itself, not kernel[grid] or its result."
        )
    if runtime.mode != "simulator" or os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError(
            _NEEDS_INTERPRETER.format(why=f"this session runs in {runtime.mode} mode")
        )
    if type(kernel).__name__ != "InterpretedFunction":
        raise RuntimeError(
            _NEEDS_INTERPRETER.format(
                why="this kernel was made for a GPU, not for the interpreter (Triton was "
                "imported before gpu_utils: put `import gpu_utils as gu` first)"
            )
        )
    return function


def triton_accesses(kernel, grid, *args, on_copies: bool = True, **meta) -> TritonAccesses:
    """Launch ``kernel[grid](*args, **meta)`` in Triton's interpreter and record every load,
    store and atomic of every program (see the module's docstring).

    ``grid`` is what ``kernel[grid]`` takes (a tuple, an int or a function of the
    meta-parameters). The kernel runs on copies of the tensor arguments (``on_copies=False``: on
    the tensors given, which it then changes as a launch would); ``record.args`` holds the
    tensors it ran on. An access outside the tensors raises
    :class:`gpu_utils.runtime.LaunchOutOfBounds`, with ``error.accesses`` the record so far."""
    __tracebackhide__ = True  # IPython leaves this frame out of a learner's traceback
    function = _interpreted(kernel)
    from triton.runtime import interpreter

    runtime.patch_triton_launch(interpreter)  # the guard, if Triton came before gpu_utils
    if on_copies:
        copies: dict[int, object] = {}

        def copied(value):
            if _is_tensor(value) and id(value) not in copies:
                copies[id(value)] = _copy(value)  # one copy per tensor, so aliases stay aliases
            return copies.get(id(value), value)

        args = tuple(copied(a) for a in args)
        meta = {k: copied(v) for k, v in meta.items()}
    signature = inspect.signature(function)
    try:
        bound = signature.bind_partial(
            *args, **{k: v for k, v in meta.items() if k in signature.parameters}
        ).arguments
    except TypeError as error:
        raise TypeError(
            f"{function.__name__}{signature}: these arguments do not fit ({error})."
        ) from None
    names = list(bound)
    grid_shape = (grid,) if isinstance(grid, int | np.integer) else grid
    record = TritonAccesses(
        kernel=function.__name__,
        grid=(1, 1, 1),
        tensors={s.name: s for s in _spans(bound, names)},
        on_copies=on_copies,
        args={k: v for k, v in bound.items() if _is_tensor(v)},
    )
    builder = interpreter.interpreter_builder
    builder_class = type(builder)
    originals = _Recorder(record, function).install(builder_class)
    try:
        kernel[grid_shape](*args, **meta)
    except runtime.LaunchOutOfBounds as error:
        record.grid = tuple(int(g) for g in builder.grid_dim)
        error.accesses = record
        raise
    finally:
        for name, original in originals.items():
            setattr(builder_class, name, original)
    record.grid = tuple(int(g) for g in builder.grid_dim)
    return record


class _CallableModule(types.ModuleType):
    """``gu.triton_accesses(...)`` calls :func:`triton_accesses`; the module's names stay
    reachable (``gu.triton_accesses.TritonAccesses``)."""

    def __call__(self, kernel, grid, *args, **meta) -> TritonAccesses:
        __tracebackhide__ = True
        return triton_accesses(kernel, grid, *args, **meta)


sys.modules[__name__].__class__ = _CallableModule
