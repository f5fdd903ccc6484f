"""See what the hardware would see: coalescing, bank conflicts, divergence and races (chapter 04).

Usage::

    report = gu.trace.analyze(kernel, griddim, blockdim, *args)   # like kernel[griddim, blockdim](*args)
    print(report)                                # summary, races, and a table per source line
    report.global_load_sectors_per_request       # 4.0: 32 threads read 32 consecutive float32
    report.global_store_sectors_per_request
    report.arrays["out"].stores.sectors_per_request   # per array (kernel argument or shared array)
    report.shared_bank_conflicts                 # extra shared-memory wavefronts
    report.divergent_branches                    # warps whose threads took different paths
    report.races                                 # tuple of Race; print(race) says it in words
    report.races_cut_short                       # True if the race check stopped early
    report.divergent_barriers                    # lines of syncthreads only some threads reach
    report.lines                                 # LineStats per source line

``analyze`` runs the kernel on a CUDA simulator in either mode (the course's, :mod:`gpu_utils.sim`;
numba-cuda's with ``GPU_COURSE_SIM=numba``, or in GPU mode) (NumPy arguments are updated
in place, as by a launch; GPU device arrays are copied to the host and left unchanged), recording
every global and shared memory access of every thread. Warps are 32 consecutive linear thread ids
of a block. One warp-wide *request* groups the accesses of a warp's threads made by the same
source line for the same time (each thread's n-th access from that line). Definitions:

* sectors per request: distinct 32-byte sectors a request touches, what Nsight Compute reports as
  ``l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum``.
  Allocations start 256-byte aligned, as ``cudaMalloc`` guarantees (CUDA C++ Programming Guide,
  "Device Memory Accesses"). 32 consecutive float32 = 128 bytes = 4 sectors; stride 32 = 32.
* efficiency: distinct bytes the threads asked for / bytes moved (sectors x 32).
* bank conflicts: shared memory has 32 banks of 4-byte words (Programming Guide, "Shared Memory",
  compute capability 5.x and later); a request needs as many wavefronts as the largest number of
  distinct words it touches in one bank (threads reading the same word share it: a broadcast).
  Conflicts are the wavefronts beyond the minimum, ceil(distinct words / 32).
* divergent branches: warps in which not all threads executed the same sequence of kernel lines
  (recorded with ``sys.settrace`` on the kernel's code); each is counted at the last line the
  threads shared. A branch inside one line (``a if c else b``) is not seen.
* races: two threads touch overlapping bytes (a float64 and a float32 view of one buffer overlap
  where their bytes do), at least one writes, not both atomically, and nothing orders them: a
  ``syncthreads`` between them, or within a warp a ``syncwarp`` whose mask included both lanes
  (directly or through other lanes: ``syncwarp(mask)`` orders only the lanes in ``mask``; PTX ISA,
  ``bar.warp.sync``). Threads of different blocks are never ordered within a launch, except the
  pattern "write, ``threadfence``, atomic" in one thread and "the same atomic, its returned value
  tested" before the read in the other (the CUDA samples' threadFenceReduction; a fence alone, or
  a ticket that is never tested, orders nothing). ``Race.same_warp`` says a ``syncwarp`` would
  do. The check compares at most ``RACE_COMPARISONS_LIMIT`` pairs of accesses per launch (pairs
  that cannot race are never compared); ``TraceReport.races_cut_short`` says when it stopped there.
* divergent barriers: source lines of ``cuda.syncthreads()`` (or ``syncthreads_count/and/or``)
  that the threads of a block reach a different number of times, among the threads that reach any
  barrier at all, or that a thread reaching none skipped and then went on to touch memory on a
  later line (a thread that exits early counts as arrived, as the PTX ISA's ``exit`` says). The
  CUDA C++ Programming Guide ("Synchronization Functions") allows ``__syncthreads()`` in
  conditional code only if the condition evaluates identically across the entire thread block;
  otherwise the kernel may hang or compute wrong results. The race check alone misses such a
  barrier, because the simulated barrier releases once every thread still running has arrived.
"""

from __future__ import annotations

import bisect
import linecache
import math
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..sim import _trace_run as engine
from ..sim._trace_run import (
    ATOMIC,
    CODE,
    EPOCH,
    FENCES_BEFORE,
    GLOBAL,
    KIND,
    LINE,
    LOAD,
    NBYTES,
    OCCURRENCE,
    OFFSET,
    ROOT,
    SHARED,
    SPACE,
    STORE,
    TESTED,
    WCLOCK,
)

__all__ = [
    "ArrayStats",
    "GlobalStats",
    "LineStats",
    "Race",
    "SharedStats",
    "TraceReport",
    "analyze",
]

SECTOR_BYTES = 32
BANKS = 32
BANK_BYTES = 4
WARP = 32
SPACES = {GLOBAL: "global", SHARED: "shared"}
#: Most pairs of accesses the race check compares in one launch; past it the report says so.
RACE_COMPARISONS_LIMIT = 1_000_000
_NOTHING: frozenset = frozenset()


# --- results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GlobalStats:
    """Global memory requests of one direction (loads or stores)."""

    requests: int = 0
    sectors: int = 0
    useful_bytes: int = 0
    accesses: int = 0  # element accesses by single threads

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0

    @property
    def bytes_moved(self) -> int:
        return self.sectors * SECTOR_BYTES

    @property
    def efficiency(self) -> float | None:
        """Useful bytes / moved bytes, or None when nothing moved."""
        return self.useful_bytes / self.bytes_moved if self.sectors else None

    def __add__(self, other: GlobalStats) -> GlobalStats:
        return GlobalStats(
            self.requests + other.requests,
            self.sectors + other.sectors,
            self.useful_bytes + other.useful_bytes,
            self.accesses + other.accesses,
        )


@dataclass(frozen=True)
class SharedStats:
    """Shared memory requests of one direction, and their wavefronts."""

    requests: int = 0
    wavefronts: int = 0
    ideal_wavefronts: int = 0
    accesses: int = 0

    @property
    def bank_conflicts(self) -> int:
        """Extra wavefronts caused by bank conflicts."""
        return self.wavefronts - self.ideal_wavefronts

    def __add__(self, other: SharedStats) -> SharedStats:
        return SharedStats(
            self.requests + other.requests,
            self.wavefronts + other.wavefronts,
            self.ideal_wavefronts + other.ideal_wavefronts,
            self.accesses + other.accesses,
        )


@dataclass(frozen=True)
class ArrayStats:
    """Traffic of one allocation: a kernel argument (global) or a shared array."""

    name: str
    space: str
    loads: GlobalStats | SharedStats
    stores: GlobalStats | SharedStats
    atomics: int = 0
    elements: int = 0  # the allocation's size in elements
    itemsize: int = 4  # bytes per element


@dataclass(frozen=True)
class LineStats:
    """Everything recorded at one source line."""

    file: str
    line: int
    source: str
    global_loads: GlobalStats = GlobalStats()
    global_stores: GlobalStats = GlobalStats()
    shared_loads: SharedStats = SharedStats()
    shared_stores: SharedStats = SharedStats()
    atomics: int = 0
    divergent_branches: int = 0

    @property
    def global_load_sectors_per_request(self) -> float:
        return self.global_loads.sectors_per_request

    @property
    def global_store_sectors_per_request(self) -> float:
        return self.global_stores.sectors_per_request

    @property
    def shared_bank_conflicts(self) -> int:
        return self.shared_loads.bank_conflicts + self.shared_stores.bank_conflicts

    @property
    def where(self) -> str:
        return _where(self.file, self.line)


@dataclass(frozen=True)
class Race:
    """A hazard: two threads touched one address without an order between them."""

    kind: str  # "read-modify-write", "write-write" or "read-write"
    space: str  # "global" or "shared"
    array: str
    index: tuple[int, ...] | None  # element index, when the address is an element's start
    address: int  # byte offset from the start of the array
    threads: tuple[tuple[int, int, int], tuple[int, int, int]]  # threadIdx of each
    blocks: tuple[tuple[int, int, int], tuple[int, int, int]]  # blockIdx of each
    lines: tuple[int, int]
    files: tuple[str, str]
    sources: tuple[str, str]
    addresses: int = 1  # how many addresses show this same race
    same_warp: bool = False  # every pair found is two lanes of one warp (a syncwarp would do)

    @property
    def across_blocks(self) -> bool:
        return self.blocks[0] != self.blocks[1]

    @property
    def element(self) -> str:
        if self.index is None:
            return f"{self.array} (byte {self.address})"
        return f"{self.array}[{', '.join(str(i) for i in self.index)}]"

    def describe(self) -> str:
        """The race in one paragraph: what, where, which threads, and what orders it."""
        (a, b), (ba, bb) = self.threads, self.blocks
        who = (
            f"thread {_dim(a)} of block {_dim(ba)} and thread {_dim(b)} of block {_dim(bb)}"
            if self.across_blocks
            else f"threads {_dim(a)} and {_dim(b)} of block {_dim(ba)}"
        )
        what = {
            "read-modify-write": "both read and write",
            "write-write": "both write",
            "read-write": "one writes and the other reads",
        }[self.kind]
        places = [_where(self.files[0], self.lines[0]), _where(self.files[1], self.lines[1])]
        sources = [s for s in dict.fromkeys(self.sources) if s]
        at = places[0] if places[0] == places[1] else f"{places[0]} and {places[1]}"
        if sources:
            at += ": " + " / ".join(f"`{s}`" for s in sources)
        if self.across_blocks:
            order = "and threads of different blocks are not ordered within a launch"
        elif self.kind == "read-modify-write":
            order = "without an atomic operation, so one update can overwrite another"
        elif self.same_warp:
            order = (
                "and no cuda.syncwarp() that both lanes take part in comes between them (they are "
                "in one warp: a cuda.syncwarp() whose mask includes both lanes orders them)"
            )
        elif self.space == "global":
            order = "and nothing orders the two accesses"
        else:
            order = "with no cuda.syncthreads() between them"
        more = (
            f" (and {self.addresses - 1} more address{'es' if self.addresses > 2 else ''})"
            if self.addresses > 1
            else ""
        )
        return (
            f"{self.kind} race on {self.element} in {self.space} memory{more}: {who} {what} it "
            f"({at}), {order}."
        )

    __str__ = describe


@dataclass(frozen=True)
class TraceReport:
    """What one traced launch did to memory; see the module docstring for the definitions."""

    kernel: str
    griddim: tuple[int, int, int]
    blockdim: tuple[int, int, int]
    global_loads: GlobalStats
    global_stores: GlobalStats
    shared_loads: SharedStats
    shared_stores: SharedStats
    atomics: int
    divergent_branches: int
    races: tuple[Race, ...]
    lines: tuple[LineStats, ...]
    arrays: dict[str, ArrayStats] = field(repr=False)
    divergent_barriers: tuple[int, ...] = ()
    races_cut_short: bool = False  # the race check stopped at RACE_COMPARISONS_LIMIT pairs

    @property
    def threads(self) -> int:
        return math.prod(self.griddim) * math.prod(self.blockdim)

    @property
    def warps(self) -> int:
        return math.prod(self.griddim) * -(-math.prod(self.blockdim) // WARP)

    @property
    def global_load_sectors_per_request(self) -> float:
        return self.global_loads.sectors_per_request

    @property
    def global_store_sectors_per_request(self) -> float:
        return self.global_stores.sectors_per_request

    @property
    def bytes_moved(self) -> int:
        return self.global_loads.bytes_moved + self.global_stores.bytes_moved

    @property
    def useful_bytes(self) -> int:
        return self.global_loads.useful_bytes + self.global_stores.useful_bytes

    @property
    def efficiency(self) -> float | None:
        return self.useful_bytes / self.bytes_moved if self.bytes_moved else None

    @property
    def shared_bank_conflicts(self) -> int:
        return self.shared_loads.bank_conflicts + self.shared_stores.bank_conflicts

    def line(self, number: int) -> LineStats:
        """The statistics of one source line (in the kernel's file)."""
        for stats in self.lines:
            if stats.line == number:
                return stats
        raise KeyError(
            f"nothing was recorded at line {number}; lines: {[s.line for s in self.lines]}"
        )

    def summary(self) -> str:
        grid, block = _dim(self.griddim), _dim(self.blockdim)
        text = [
            f"Trace of {self.kernel}: grid {grid} x block {block} = {self.threads:,} threads "
            f"in {self.warps:,} warps.",
            "  global loads:  " + _global_text(self.global_loads),
            "  global stores: " + _global_text(self.global_stores),
            f"  shared memory: {self.shared_loads.requests + self.shared_stores.requests:,} "
            f"requests, {self.shared_bank_conflicts:,} bank conflicts (extra wavefronts)",
        ]
        if self.atomics:
            text.append(f"  atomic requests: {self.atomics:,}")
        text.append(f"  divergent branches: {self.divergent_branches:,} warps")
        if not self.races:
            text.append("  races: none found")
        else:
            text.append(f"  races: {len(self.races)}")
            text += [f"    - {race.describe()}" for race in self.races]
        if self.races_cut_short:
            text.append(
                f"  race check cut short after {RACE_COMPARISONS_LIMIT:,} comparisons of "
                "accesses: races after that point may be missing (trace a smaller launch)"
            )
        return "\n".join(text)

    def table(self) -> str:
        """One row per source line: sectors per request, bank conflicts, divergence."""
        header = f"{'line':>6}  {'ld sect/req':>11}  {'st sect/req':>11}  {'bank confl':>10}  {'diverg':>6}  source"
        rows = [header]
        for s in self.lines:
            load = f"{s.global_load_sectors_per_request:.1f}" if s.global_loads.requests else "-"
            store = f"{s.global_store_sectors_per_request:.1f}" if s.global_stores.requests else "-"
            shared = s.shared_loads.requests + s.shared_stores.requests
            conflicts = str(s.shared_bank_conflicts) if shared else "-"
            diverged = str(s.divergent_branches) if s.divergent_branches else "-"
            rows.append(
                f"{s.line:>6}  {load:>11}  {store:>11}  {conflicts:>10}  {diverged:>6}  {s.source}"
            )
        return "\n".join(rows)

    def __str__(self) -> str:
        return self.summary() + "\n" + self.table()

    __repr__ = __str__


def _global_text(stats: GlobalStats) -> str:
    if not stats.requests:
        return "none"
    efficiency = f"{100 * stats.efficiency:.0f}%" if stats.efficiency is not None else "-"
    return (
        f"{stats.requests:,} requests, {stats.sectors_per_request:.2f} sectors/request, "
        f"{stats.bytes_moved:,} B moved, efficiency {efficiency}"
    )


def _dim(values) -> str:
    values = tuple(values)
    while len(values) > 1 and values[-1] == 1:
        values = values[:-1]
    return "(" + ", ".join(str(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def _where(file: str, line: int) -> str:
    if "ipykernel" in file or file.startswith("<"):
        return f"line {line} of its cell"
    return f"{os.path.basename(file)}, line {line}"


def _source(code, line: int) -> str:
    return linecache.getline(code.co_filename, line).strip()


# --- analysis ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Who:
    """A thread's identity, kept after its block (and its access log) is gone."""

    threadIdx: tuple[int, int, int]  # CUDA's name for it
    thread_id: int

    @classmethod
    def of(cls, thread) -> _Who:
        return thread if isinstance(thread, cls) else cls(tuple(thread.threadIdx), thread.thread_id)


class _LineAccumulator:
    __slots__ = ("atomics", "divergent", "gl", "gs", "sl", "ss")

    def __init__(self) -> None:
        self.gl, self.gs = GlobalStats(), GlobalStats()
        self.sl, self.ss = SharedStats(), SharedStats()
        self.atomics = 0
        self.divergent = 0


def _global_request(accesses: list[tuple[int, int]]) -> GlobalStats:
    sectors, useful = set(), {}
    for offset, nbytes in accesses:
        sectors.update(range(offset // SECTOR_BYTES, (offset + nbytes - 1) // SECTOR_BYTES + 1))
        useful[offset] = max(nbytes, useful.get(offset, 0))
    return GlobalStats(1, len(sectors), sum(useful.values()), len(accesses))


def _shared_request(accesses: list[tuple[int, int]], base: int) -> SharedStats:
    words = set()
    for offset, nbytes in accesses:
        address = base + offset
        words.update(range(address // BANK_BYTES, (address + nbytes - 1) // BANK_BYTES + 1))
    per_bank = Counter(word % BANKS for word in words)
    ideal = -(-len(words) // BANKS)
    return SharedStats(1, max(per_bank.values()), ideal, len(accesses))


class _Analysis:
    """Turns each finished block's access logs into statistics, races and divergence."""

    def __init__(self, recorder: engine.Recorder, divergence: bool) -> None:
        self.recorder = recorder
        self.divergence = divergence
        self.lines: dict[tuple, _LineAccumulator] = defaultdict(_LineAccumulator)
        self.arrays: dict[int, list] = defaultdict(
            lambda: [GlobalStats(), GlobalStats(), SharedStats(), SharedStats(), 0]
        )
        # key -> [example, byte offsets affected, whether the example's threads share a warp]
        self.races: dict[tuple, list] = {}
        self.history: dict[
            tuple, list
        ] = {}  # global address -> [store, load, atomic] of earlier blocks
        self.divergent_warps = 0
        self.barrier_lines: set[int] = set()  # syncthreads lines only some threads reach
        self.comparisons = 0  # pairs of accesses compared by the race check
        self.cut_short = False

    # requests -------------------------------------------------------------------------------
    def on_block(self, block_index, threads) -> None:
        groups: dict[tuple, list] = defaultdict(list)
        by_address: dict[tuple, list] = defaultdict(list)  # (space, root, unit offset) -> accesses
        atomics: set[tuple] = set()
        roots = self.recorder.roots
        mixed = {k: root.unit for k, root in enumerate(roots) if root.mixed}  # views of 2+ widths
        for thread in threads:
            warp = thread.thread_id // WARP
            for r in thread.records:
                if mixed and r[ROOT] in mixed:  # every unit of bytes the access covers
                    unit, offset, access = mixed[r[ROOT]], r[OFFSET], (thread, r)
                    for start in range(offset - offset % unit, offset + r[NBYTES], unit):
                        by_address[(r[SPACE], r[ROOT], start)].append(access)
                else:
                    by_address[(r[SPACE], r[ROOT], r[OFFSET])].append((thread, r))
                if r[ATOMIC]:
                    if r[KIND] == STORE:
                        atomics.add((warp, r[ROOT], r[CODE], r[LINE], r[OCCURRENCE]))
                    continue
                key = (warp, r[KIND], r[SPACE], r[ROOT], r[CODE], r[LINE], r[OCCURRENCE])
                groups[key].append((r[OFFSET], r[NBYTES]))
        for (_, kind, space, root, code, line, _), accesses in groups.items():
            self._add_request(kind, space, root, code, line, accesses)
        for _, root, code, line, _ in atomics:
            self.lines[(code, line)].atomics += 1
            self.arrays[root][4] += 1
        self._races_within_block(block_index, by_address)
        self._races_across_blocks(block_index, by_address)
        self._divergent_barriers(threads)
        if self.divergence:
            self._divergence(threads)

    def _add_request(self, kind, space, root, code, line, accesses) -> None:
        accumulator = self.lines[(code, line)]
        array = self.arrays[root]
        if space == GLOBAL:
            stats = _global_request(accesses)
            if kind == LOAD:
                accumulator.gl += stats
                array[0] += stats
            else:
                accumulator.gs += stats
                array[1] += stats
        else:
            stats = _shared_request(accesses, self.recorder.roots[root].base)
            if kind == LOAD:
                accumulator.sl += stats
                array[2] += stats
            else:
                accumulator.ss += stats
                array[3] += stats

    def _divergent_barriers(self, threads) -> None:
        """Barrier lines reached a different number of times by the threads that reach any, and
        barriers that a thread reaching none skipped while it went on past them."""
        counts = [Counter(t.barrier_sites) for t in threads if getattr(t, "barrier_sites", None)]
        if not counts:
            return
        sites = set().union(*counts)
        for site in sites:
            if len({count[site] for count in counts}) > 1:
                self.barrier_lines.add(site[1])
        # A thread that reaches no barrier and exits early counts as arrived (PTX ISA, `exit`);
        # one that skips a barrier but then touches memory on a later line of the same code
        # (a syncthreads inside an `if`) is what the Programming Guide forbids.
        skipped = [t for t in threads if not getattr(t, "barrier_sites", None) and t.records]
        for site in sites:
            code, line = site
            if any(r[CODE] is code and r[LINE] > line for t in skipped for r in t.records):
                self.barrier_lines.add(line)

    # races ----------------------------------------------------------------------------------
    def _races_within_block(self, block_index, by_address) -> None:
        for (space, root, offset), accesses in by_address.items():
            if len(accesses) < 2:
                continue
            if not any(r[KIND] == STORE for _, r in accesses):
                continue
            if all(r[ATOMIC] for _, r in accesses):
                continue
            by_epoch: dict[int, list] = defaultdict(list)
            for thread, r in accesses:
                by_epoch[r[EPOCH]].append((thread, r))
            for group in by_epoch.values():
                if not any(r[KIND] == STORE for _, r in group):
                    continue  # only reads between these two syncthreads
                if all(r[ATOMIC] for _, r in group):
                    continue  # only atomics
                pair, spans_warps = self._unordered_pair(group)
                if pair is not None:
                    kind = _race_kind(group, pair)
                    blocks = (block_index, block_index)
                    self._record_race(kind, space, root, offset, pair, blocks, not spans_warps)
                    break

    def _unordered_pair(self, group: list) -> tuple[tuple | None, bool]:
        """A conflicting pair of accesses (one writes, not both atomic) of two threads of one
        block between the same two syncthreads that no syncwarp orders, or None; and whether
        some such pair spans two warps (then only a syncthreads orders them).

        Accesses of one thread between two of its syncwarps are alike for ordering, so they are
        compared once (an ``_Interval``); threads of different warps are never ordered here.
        """
        if len(group) < 2:
            return None, False
        intervals: dict[tuple, _Interval] = {}
        for thread, r in group:
            key = (thread.thread_id, id(r[WCLOCK]))
            interval = intervals.get(key)
            if interval is None:
                interval = intervals[key] = _Interval(thread, r[WCLOCK])
            interval.add(r)
        by_warp: dict[int, list[_Interval]] = defaultdict(list)
        for interval in intervals.values():
            by_warp[interval.warp].append(interval)
        across = _pair_across_warps(intervals.values(), by_warp) if len(by_warp) > 1 else None
        for members in by_warp.values():
            pair = self._pair_within_warp(members)
            if pair is not None:
                return pair, across is not None
            if self.cut_short:
                break
        return across, across is not None

    def _pair_within_warp(self, members: list[_Interval]):
        """An unordered conflicting pair of two lanes of one warp, by their syncwarp clocks."""
        # each thread's intervals in program order (its own syncwarp count grows by one)
        threads: dict[int, list[_Interval]] = defaultdict(list)
        for m in members:
            threads[m.thread.thread_id].append(m)
        if len(threads) < 2:
            return None
        orders = {}
        for tid, own in threads.items():
            own.sort(key=lambda m: m.clock[m.lane])
            orders[tid] = [m.clock[m.lane] for m in own]
        for a in members:  # every conflicting pair has a plain access: start from those
            if a.store is None and a.load is None:
                continue
            for tid, own in threads.items():
                if tid == a.thread.thread_id:
                    continue
                self.comparisons += 1
                if self.comparisons > RACE_COMPARISONS_LIMIT:
                    self.cut_short = True
                    return None
                # b is after a once b knows of a syncwarp a's lane made after a; b is before a
                # while a knows of one b's lane made after b (both monotone in b's order)
                lane = own[0].lane
                k = bisect.bisect_left(orders[tid], a.clock[lane])
                while k < len(own) and own[k].clock[a.lane] <= a.clock[a.lane]:
                    pair = a.conflict(own[k])
                    if pair is not None:
                        return pair
                    k += 1
        return None

    def _races_across_blocks(self, block_index, by_address) -> None:
        for (space, root, offset), accesses in by_address.items():
            if space != GLOBAL:
                continue
            # per kind (non-atomic store, non-atomic load, atomic): the access least ordered as
            # the earlier one (no fence + atomic after it) and as the later one (no tested atomic)
            mine: list = [None, None, None]
            for thread, r in accesses:
                slot = 2 if r[ATOMIC] else (0 if r[KIND] == STORE else 1)
                reps = mine[slot]
                if reps is not None and not reps[0][3] and not reps[1][1][TESTED]:
                    continue
                fenced = (
                    frozenset(
                        where for fences, where in thread.atomic_events if fences > r[FENCES_BEFORE]
                    )
                    if thread.atomic_events
                    else _NOTHING
                )
                access = (_Who.of(thread), r, block_index, fenced)
                if reps is None:
                    mine[slot] = [access, access]
                    continue
                if reps[0][3] and not fenced:
                    reps[0] = access
                if reps[1][1][TESTED] and not r[TESTED]:
                    reps[1] = access
            key = (root, offset)
            earlier = self.history.get(key)
            if earlier is None:
                self.history[key] = mine
                continue
            for mine_slot, earlier_slots in ((0, (0, 1, 2)), (1, (0, 2)), (2, (0, 1))):
                if mine[mine_slot] is None:
                    continue
                now = mine[mine_slot][1]
                before = next(
                    (
                        earlier[s][0]
                        for s in earlier_slots
                        if earlier[s] is not None and not _fenced_then_tested(earlier[s][0], now)
                    ),
                    None,
                )
                if before is not None:
                    both_rmw = all(x[0] is not None and x[1] is not None for x in (earlier, mine))
                    kind = (
                        "read-modify-write"
                        if both_rmw
                        else "write-write"
                        if before[1][KIND] == STORE and now[1][KIND] == STORE
                        else "read-write"
                    )
                    pair = ((before[0], before[1]), (now[0], now[1]))
                    blocks = (before[2], block_index)
                    self._record_race(kind, space, root, offset, pair, blocks, False)
                    break
            for slot in range(3):
                if mine[slot] is None:
                    continue
                if earlier[slot] is None:
                    earlier[slot] = mine[slot]
                elif earlier[slot][0][3] and not mine[slot][0][3]:
                    earlier[slot] = [mine[slot][0], earlier[slot][1]]

    def _record_race(self, kind, space, root, offset, pair, blocks, one_warp: bool) -> None:
        (_, ra), (_, rb) = pair
        sites = sorted(
            [
                (ra[CODE].co_filename, ra[LINE], ra[CODE]),
                (rb[CODE].co_filename, rb[LINE], rb[CODE]),
            ],
            key=lambda s: (s[0], s[1]),
        )
        key = (space, root, kind, blocks[0] != blocks[1], tuple((s[0], s[1]) for s in sites))
        (ta, ra), (tb, rb) = pair
        known = self.races.get(key)
        if known is not None:
            known[1].add(offset)
            known[2] = known[2] and one_warp  # a syncwarp is the fix only if no pair spans warps
            return
        pair = ((_Who.of(ta), ra), (_Who.of(tb), rb))  # thread ids only, not threads and logs
        self.races[key] = [(kind, space, root, offset, pair, blocks), {offset}, one_warp]

    # divergence -----------------------------------------------------------------------------
    def _divergence(self, threads) -> None:
        by_warp: dict[int, list] = defaultdict(list)
        for thread in threads:
            by_warp[thread.thread_id // WARP].append(tuple(thread.path or ()))
        code = threads[0]._trace_code if threads else None
        for paths in by_warp.values():
            distinct = set(paths)
            if len(distinct) < 2:
                continue
            self.divergent_warps += 1
            prefix = _common_prefix(list(distinct))
            line = prefix[-1] if prefix else code.co_firstlineno
            self.lines[(code, line)].divergent += 1

    # report ---------------------------------------------------------------------------------
    def report(self, function, griddim, blockdim) -> TraceReport:
        roots = self.recorder.roots
        lines = []
        for (code, line), acc in sorted(
            self.lines.items(),
            key=lambda item: (
                item[0][0] is not function.__code__,
                item[0][0].co_filename,
                item[0][1],
            ),
        ):
            lines.append(
                LineStats(
                    code.co_filename,
                    line,
                    _source(code, line),
                    acc.gl,
                    acc.gs,
                    acc.sl,
                    acc.ss,
                    acc.atomics,
                    acc.divergent,
                )
            )
        arrays = {}
        for index, root in enumerate(roots):
            gl, gs, sl, ss, atomic_count = self.arrays.get(
                index, [GlobalStats(), GlobalStats(), SharedStats(), SharedStats(), 0]
            )
            shared = root.space == SHARED
            name = root.name if root.name not in arrays else f"{root.name}#{index}"
            arrays[name] = ArrayStats(
                name,
                SPACES[root.space],
                sl if shared else gl,
                ss if shared else gs,
                atomic_count,
                math.prod(root.shape),
                root.dtype.itemsize,
            )
        races = [
            self._race(*example, len(offsets), one_warp)
            for example, offsets, one_warp in self.races.values()
        ]
        # races of one block first, shared memory first, and races that only a syncthreads
        # orders before those a syncwarp would (the first one shown names the fix for all)
        races.sort(
            key=lambda race: (
                race.across_blocks,
                race.space != "shared",
                race.same_warp,
                race.lines,
            )
        )
        accumulators = list(self.lines.values())
        return TraceReport(
            kernel=function.__name__,
            griddim=griddim,
            blockdim=blockdim,
            global_loads=sum((acc.gl for acc in accumulators), GlobalStats()),
            global_stores=sum((acc.gs for acc in accumulators), GlobalStats()),
            shared_loads=sum((acc.sl for acc in accumulators), SharedStats()),
            shared_stores=sum((acc.ss for acc in accumulators), SharedStats()),
            atomics=sum(acc.atomics for acc in accumulators),
            divergent_branches=self.divergent_warps,
            races=tuple(races),
            lines=tuple(lines),
            arrays=arrays,
            divergent_barriers=tuple(sorted(self.barrier_lines)),
            races_cut_short=self.cut_short,
        )

    def _race(self, kind, space, root_index, offset, pair, blocks, count, one_warp) -> Race:
        root = self.recorder.roots[root_index]
        (ta, ra), (tb, rb) = pair
        return Race(
            kind=kind,
            space=SPACES[space],
            array=root.name,
            index=root.element(offset),
            address=offset,
            threads=(tuple(ta.threadIdx), tuple(tb.threadIdx)),
            blocks=(
                tuple(blocks[0]) + (0,) * (3 - len(blocks[0])),
                tuple(blocks[1]) + (0,) * (3 - len(blocks[1])),
            ),
            lines=(ra[LINE], rb[LINE]),
            files=(ra[CODE].co_filename, rb[CODE].co_filename),
            sources=(_source(ra[CODE], ra[LINE]), _source(rb[CODE], rb[LINE])),
            addresses=count,
            same_warp=one_warp,
        )


class _Interval:
    """One thread's accesses to one address between two of its syncwarps: its first plain store,
    plain load and atomic (an atomic both reads and writes), each as (thread, record)."""

    __slots__ = ("atomic", "clock", "lane", "load", "store", "thread", "warp")

    def __init__(self, thread, clock) -> None:
        self.thread = thread
        self.clock = clock
        self.lane = thread.thread_id % WARP
        self.warp = thread.thread_id // WARP
        self.store = self.load = self.atomic = None

    def add(self, r: tuple) -> None:
        if r[ATOMIC]:
            if self.atomic is None or (r[KIND] == STORE and self.atomic[1][KIND] != STORE):
                self.atomic = (self.thread, r)
        elif r[KIND] == STORE:
            if self.store is None:
                self.store = (self.thread, r)
        elif self.load is None:
            self.load = (self.thread, r)

    @classmethod
    def merged(cls, members: list[_Interval]) -> _Interval:
        """The first store, load and atomic of several intervals (one warp's), for pairs across
        warps, which nothing but a syncthreads orders."""
        merged = cls(members[0].thread, members[0].clock)
        for m in members:
            merged.store = merged.store or m.store
            merged.load = merged.load or m.load
            merged.atomic = merged.atomic or m.atomic
        return merged

    def conflict(self, other: _Interval):
        """A (write, other access) pair, each (thread, record), that conflicts, or None."""
        if self.store is not None:
            partner = other.store or other.load or other.atomic
            if partner is not None:
                return (self.store, partner)
        if other.store is not None:
            partner = self.load or self.atomic
            if partner is not None:
                return (other.store, partner)
        if self.atomic is not None and other.load is not None:
            return (self.atomic, other.load)
        if other.atomic is not None and self.load is not None:
            return (other.atomic, self.load)
        return None


def _pair_across_warps(intervals, by_warp: dict[int, list[_Interval]]):
    """A conflicting pair of lanes of two different warps (only a syncthreads orders those)."""
    firsts = {w: _Interval.merged(members) for w, members in by_warp.items()}
    for interval in intervals:  # every conflicting pair has a plain access: start from those
        if interval.store is None and interval.load is None:
            continue
        for w, other in firsts.items():
            if w != interval.warp:
                pair = interval.conflict(other)
                if pair is not None:
                    return pair
    return None


def _common_prefix(paths: list[tuple[int, ...]]) -> tuple[int, ...]:
    shortest = min(paths, key=len)
    for k, line in enumerate(shortest):
        if any(path[k] != line for path in paths):
            return shortest[:k]
    return shortest


def _race_kind(group: list, pair) -> str:
    (tw, _), (ta, a) = pair

    def kinds(thread) -> set[int]:
        return {r[KIND] for t, r in group if t is thread and not r[ATOMIC]}

    if kinds(tw) >= {LOAD, STORE} and kinds(ta) >= {LOAD, STORE}:
        return "read-modify-write"
    return "write-write" if a[KIND] == STORE else "read-write"


def _fenced_then_tested(before: tuple, now: tuple) -> bool:
    """The earlier access's thread fenced after it, then did an atomic whose returned value the
    later thread (or, through a syncthreads, a thread of its block) tested before its access."""
    return bool(before[3] & now[1][TESTED])


def analyze(
    kernel,
    griddim,
    blockdim,
    *args,
    dynamic_shared_bytes: int = 0,
    divergence: bool = True,
) -> TraceReport:
    """Run ``kernel[griddim, blockdim](*args)`` on the simulator and report its memory behaviour.

    Keep launches small: a trace records every access of every thread, about 10,000 to 20,000
    threads per second on the course's simulator (a few thousand on numba-cuda's), measured on a
    2-core CPU. ``divergence=False`` skips the per-line execution trace (faster).
    """
    if engine.traced_on() == "compare":  # GPU_COURSE_SIM=compare: both engines, numba's kept
        from ..sim import compare

        return compare.analyze_both(
            analyze, kernel, griddim, blockdim, args, dynamic_shared_bytes, divergence
        )
    recorder = engine.Recorder()
    analysis = _Analysis(recorder, divergence)
    function, grid, block = engine.run(
        kernel,
        griddim,
        blockdim,
        args,
        recorder=recorder,
        on_block=analysis.on_block,
        dynshared_size=dynamic_shared_bytes,
        divergence=divergence,
    )
    return analysis.report(function, grid, block)
