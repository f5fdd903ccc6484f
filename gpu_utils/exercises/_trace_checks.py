"""Checks from a kernel's memory trace (chapter 04's ``gu.trace``): races, coalescing, bank
conflicts. ``kernel_exercise`` in ``_kernels.py`` runs them; chapter modules pass requirements::

    from ._kernels import coalesced, kernel_exercise, no_bank_conflicts

    kernel_exercise(..., requirements=(coalesced("a", "out"), no_bank_conflicts("tile")))

Every kernel exercise checks for races by default (``check_races=False`` opts out). The trace runs
on one small case in the checker's process, on the simulator, after the kernel is correct.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..one_gpu.trace import Race, TraceReport

#: Largest launch (in threads) traced for a race check or a requirement.
TRACE_THREAD_LIMIT = 4096


@dataclass(frozen=True)
class TraceRequirement:
    """A condition on the trace. ``check(report)`` returns None when met, else (what, hint)."""

    label: str
    check: Callable[[TraceReport], tuple[str, str] | None]
    needs_divergence: bool = False


def _pick(text: str | Callable[..., str] | None, default: str, *args) -> str:
    if text is None:
        return default
    return text(*args) if callable(text) else text


def _names(arrays: Sequence[str], everything: str) -> str:
    quoted = [f"`{a}`" for a in arrays]
    if not quoted:
        return everything
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _global_array(report: TraceReport, name: str):
    """The global array called ``name`` (a shared array may carry the same name as a kernel
    argument; the trace then keys the later one ``name#index``)."""
    for key, stats in report.arrays.items():
        if stats.space == "global" and (key == name or key.split("#")[0] == name):
            return stats
    globals_ = [key for key, stats in report.arrays.items() if stats.space == "global"]
    raise KeyError(f"requirement names global array {name!r}, but the kernel's are {globals_}")


def _arrays(report: TraceReport, names: Sequence[str], space: str) -> list:
    if names:
        missing = [name for name in names if name not in report.arrays]
        if missing:
            raise KeyError(
                f"requirement names {missing}, but the kernel's arrays are {list(report.arrays)}"
            )
        return [report.arrays[name] for name in names]
    return [a for a in report.arrays.values() if a.space == space]


COALESCING_HINT = (
    "make consecutive threads (consecutive threadIdx.x) touch consecutive elements, so that a "
    "warp's 32 accesses fall in as few 32-byte sectors as possible."
)


def coalesced(
    *arrays: str,
    loads: bool = True,
    stores: bool = True,
    slack: float = 1.25,
    hint: str | Callable[[str, str], str] | None = None,
) -> TraceRequirement:
    """Warp requests to these global arrays (all by default) touch at most ``slack`` times the
    sectors that 32 consecutive elements need (4 for float32, 8 for float64).

    ``hint`` may be a function of (array name, "loads" or "stores").
    """

    def check(report: TraceReport):
        for array in _arrays(report, arrays, "global"):
            ideal = max(1.0, 32 * array.itemsize / 32)  # sectors for 32 consecutive elements
            for direction, wanted in (("loads", loads), ("stores", stores)):
                stats = getattr(array, direction)
                if not wanted or not stats.requests:
                    continue
                if stats.sectors_per_request > ideal * slack:
                    verb = "reads of" if direction == "loads" else "writes to"
                    what = (
                        f"your {verb} `{array.name}` are not coalesced: each warp request touches "
                        f"{stats.sectors_per_request:.1f} sectors of 32 bytes on average, where 32 "
                        f"consecutive elements need {ideal:.0f} (efficiency "
                        f"{100 * (stats.efficiency or 0):.0f}%)."
                    )
                    return what, _pick(hint, COALESCING_HINT, array.name, direction)
        return None

    return TraceRequirement(f"coalesced accesses to {_names(arrays, 'every global array')}", check)


BANK_CONFLICT_HINT = (
    "threads of a warp that read different words of the same bank wait for each other. A warp "
    "reading a column of a 32-wide float32 tile hits one bank 32 times; pad each row by one "
    "element, cuda.shared.array((32, 33), float32), so a column spreads over all 32 banks."
)


def no_bank_conflicts(
    *arrays: str, hint: str | Callable[[str], str] | None = None
) -> TraceRequirement:
    """No extra shared-memory wavefronts from bank conflicts (in these shared arrays, or any)."""

    def check(report: TraceReport):
        for array in _arrays(report, arrays, "shared"):
            conflicts = array.loads.bank_conflicts + array.stores.bank_conflicts
            if conflicts:
                requests = array.loads.requests + array.stores.requests
                what = (
                    f"shared array `{array.name}` has bank conflicts: {conflicts:,} extra "
                    f"wavefronts over {requests:,} warp requests."
                )
                return what, _pick(hint, BANK_CONFLICT_HINT, array.name)
        return None

    return TraceRequirement(f"no bank conflicts in {_names(arrays, 'shared memory')}", check)


def uses_shared_memory(hint: str | None = None) -> TraceRequirement:
    """The kernel stages data in shared memory (some shared-memory traffic is recorded)."""

    def check(report: TraceReport):
        if report.shared_loads.requests + report.shared_stores.requests == 0:
            what = "your kernel never uses shared memory, which this exercise is about."
            default = "declare a tile with cuda.shared.array(...), fill it, cuda.syncthreads(), then read it."
            return what, hint or default
        return None

    return TraceRequirement("uses shared memory", check)


def max_loads_per_element(array: str, limit: float, hint: str | None = None) -> TraceRequirement:
    """Each element of global ``array`` is read from global memory at most ``limit`` times on
    average (thread-level loads / elements)."""

    def check(report: TraceReport):
        stats = _global_array(report, array)
        per_element = stats.loads.accesses / max(1, stats.elements)
        if per_element > limit:
            what = (
                f"each element of `{array}` is read from global memory {per_element:.2f} times on "
                f"average; at most {limit:g} is the goal."
            )
            default = "load each input once into shared memory and let neighbouring threads read it there."
            return what, hint or default
        return None

    return TraceRequirement(f"at most {limit:g} global reads per element of `{array}`", check)


def max_stores_per_element(array: str, limit: float = 1.0, hint: str | None = None):
    """Each element of global ``array`` is written at most ``limit`` times on average."""

    def check(report: TraceReport):
        stats = _global_array(report, array)
        per_element = stats.stores.accesses / max(1, stats.elements)
        if per_element > limit:
            what = (
                f"elements of `{array}` are written {per_element:.2f} times on average: several "
                "threads do the same work."
            )
            default = "each element should be written by exactly one thread."
            return what, hint or default
        return None

    label = (
        f"no element of `{array}` written twice"
        if limit == 1
        else f"at most {limit:g} writes per element of `{array}`"
    )
    return TraceRequirement(label, check)


def max_divergent_branches(limit: int, hint: str | None = None) -> TraceRequirement:
    """At most ``limit`` warps whose threads took different paths."""

    def check(report: TraceReport):
        if report.divergent_branches > limit:
            where = [s for s in report.lines if s.divergent_branches]
            at = ""
            if where:  # quote the line only when its text is known
                quote = f": `{where[0].source}`" if where[0].source else ""
                at = f" (first at {where[0].where}{quote})"
            what = f"{report.divergent_branches} warps diverged{at}; at most {limit} is the goal."
            default = (
                "make all 32 threads of a warp take the same branch, e.g. branch on the warp index."
            )
            return what, hint or default
        return None

    return TraceRequirement(f"at most {limit} divergent warps", check, needs_divergence=True)


def race_hint(race: Race) -> str:
    """What to do about a race, by its kind."""
    if race.across_blocks:
        return (
            "blocks run in any order and at the same time, so combine their results with an "
            "atomic operation (cuda.atomic.add) or in a second kernel launch."
        )
    if race.kind == "read-modify-write":
        return (
            f"`{race.element} += ...` is a read, an add and a write: another thread can write in "
            f"between. Use an atomic operation, e.g. `cuda.atomic.add({race.array}, "
            f"{', '.join(str(i) for i in race.index or (0,))}, value)`, or give each thread its "
            "own element."
        )
    if race.same_warp:
        return (
            "both threads are lanes of one warp, so a warp barrier is enough: put "
            "cuda.syncwarp() between the write and the read (and before the element is "
            "overwritten), with a mask that includes both lanes; the default mask 0xFFFFFFFF "
            "names the whole warp."
        )
    if race.space == "shared":
        return (
            "put cuda.syncthreads() between the writes to shared memory and the reads of them, "
            "and another one before the shared array is overwritten (e.g. at the end of a loop)."
        )
    if race.kind == "write-write":
        return "each element should be written by exactly one thread (or use an atomic operation)."
    return "a thread must not read an element that another thread writes in the same step."


def trace_kernel(kernel, case, args, divergence: bool = False) -> TraceReport:
    """Trace one launch of ``case`` on ``args`` (the kernel's prints are swallowed)."""
    from ..one_gpu.trace import analyze

    with contextlib.redirect_stdout(io.StringIO()):
        return analyze(kernel, case.griddim, case.blockdim, *args, divergence=divergence)
