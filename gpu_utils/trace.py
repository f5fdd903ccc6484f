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
    report.divergent_barriers                    # lines of syncthreads only some threads reach
    report.lines                                 # LineStats per source line

``analyze`` runs the kernel on Numba's CUDA simulator in either mode (NumPy arguments are updated
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
* races: two threads touch the same address, at least one writes, not both atomically, and no
  ``syncthreads`` (or, within a warp, ``syncwarp``) separates them. Threads of different blocks
  are never ordered within a launch, except the pattern "write, ``threadfence``, then an atomic in
  the reading thread" (the CUDA samples' threadFenceReduction).
* divergent barriers: source lines of ``cuda.syncthreads()`` (or ``syncthreads_count/and/or``)
  that the threads of a block reach a different number of times, among the threads that reach any
  barrier at all (a thread that exits before the block's first barrier is left out). The CUDA C++
  Programming Guide ("Synchronization Functions") allows ``__syncthreads()`` in conditional code
  only if the condition evaluates identically across the entire thread block; otherwise the kernel
  may hang or compute wrong results. The race check alone misses such a barrier, because the
  simulated barrier releases once every thread still running has arrived.
"""

from __future__ import annotations

import linecache
import math
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from . import _trace_run as engine
from ._trace_run import (
    ATOMIC,
    ATOMICS_BEFORE,
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
    WEPOCH,
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
        self.races: dict[tuple, list] = {}  # key -> [first example, byte offsets affected]
        self.history: dict[
            tuple, list
        ] = {}  # global address -> [store, load, atomic] of earlier blocks
        self.divergent_warps = 0
        self.barrier_lines: set[int] = set()  # syncthreads lines only some threads reach

    # requests -------------------------------------------------------------------------------
    def on_block(self, block_index, threads) -> None:
        groups: dict[tuple, list] = defaultdict(list)
        by_address: dict[tuple, list] = defaultdict(list)
        atomics: set[tuple] = set()
        for thread in threads:
            warp = thread.thread_id // WARP
            for r in thread.records:
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
        """Barrier lines reached a different number of times by the threads that reach any."""
        counts = [Counter(t.barrier_sites) for t in threads if getattr(t, "barrier_sites", None)]
        if len(counts) < 2:
            return
        for site in set().union(*counts):
            if len({count[site] for count in counts}) > 1:
                self.barrier_lines.add(site[1])

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
                pair = _unordered_pair(group)
                if pair is not None:
                    kind = _race_kind(group, pair)
                    self._record_race(kind, space, root, offset, pair, (block_index, block_index))
                    break

    def _races_across_blocks(self, block_index, by_address) -> None:
        for (space, root, offset), accesses in by_address.items():
            if space != GLOBAL:
                continue
            mine: list = [None, None, None]  # first non-atomic store, non-atomic load, atomic
            for thread, r in accesses:
                slot = 2 if r[ATOMIC] else (0 if r[KIND] == STORE else 1)
                if mine[slot] is None:
                    fenced_after = thread.fences > r[FENCES_BEFORE]
                    mine[slot] = (_Who.of(thread), r, block_index, fenced_after)
            key = (root, offset)
            earlier = self.history.get(key)
            if earlier is None:
                self.history[key] = mine
                continue
            for mine_slot, earlier_slots in ((0, (0, 1, 2)), (1, (0, 2)), (2, (0, 1))):
                now = mine[mine_slot]
                if now is None:
                    continue
                before = next(
                    (
                        earlier[s]
                        for s in earlier_slots
                        if earlier[s] is not None and not _fenced_then_atomic(earlier[s], now)
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
                    self._record_race(kind, space, root, offset, pair, (before[2], block_index))
                    break
            for slot in range(3):
                if earlier[slot] is None:
                    earlier[slot] = mine[slot]

    def _record_race(self, kind, space, root, offset, pair, blocks) -> None:
        (_, ra), (_, rb) = pair
        sites = sorted(
            [
                (ra[CODE].co_filename, ra[LINE], ra[CODE]),
                (rb[CODE].co_filename, rb[LINE], rb[CODE]),
            ],
            key=lambda s: (s[0], s[1]),
        )
        key = (space, root, kind, blocks[0] != blocks[1], tuple((s[0], s[1]) for s in sites))
        if key in self.races:
            self.races[key][1].add(offset)
            return
        (ta, ra), (tb, rb) = pair  # keep thread ids only, not the threads and their logs
        pair = ((_Who.of(ta), ra), (_Who.of(tb), rb))
        self.races[key] = [(kind, space, root, offset, pair, blocks), {offset}]

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
        races = [self._race(*example, len(offsets)) for example, offsets in self.races.values()]
        races.sort(key=lambda race: (race.across_blocks, race.space != "shared", race.lines))
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
        )

    def _race(self, kind, space, root_index, offset, pair, blocks, count) -> Race:
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
        )


def _ordered(a: tuple, b: tuple) -> bool:
    """Whether two accesses of one block (thread, record) are ordered by a barrier."""
    (ta, ra), (tb, rb) = a, b
    if ra[EPOCH] != rb[EPOCH]:
        return True
    return ta.thread_id // WARP == tb.thread_id // WARP and ra[WEPOCH] != rb[WEPOCH]


def _unordered_pair(group: list, limit: int = 4096):
    """A (write, other access) pair of different threads with no order and not both atomic."""
    threads = {id(thread) for thread, _ in group}
    if len(threads) < 2:
        return None
    checked = 0
    for write in group:
        if write[1][KIND] != STORE:
            continue
        for other in group:
            if other[0] is write[0] or (write[1][ATOMIC] and other[1][ATOMIC]):
                continue
            checked += 1
            if checked > limit:
                return None
            if not _ordered(write, other):
                return (write, other)
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


def _fenced_then_atomic(before: tuple, now: tuple) -> bool:
    """The earlier access's thread fenced after it and the later thread did an atomic first."""
    return before[3] and now[1][ATOMICS_BEFORE] > 0


def analyze(
    kernel,
    griddim,
    blockdim,
    *args,
    dynamic_shared_bytes: int = 0,
    divergence: bool = True,
) -> TraceReport:
    """Run ``kernel[griddim, blockdim](*args)`` on the simulator and report its memory behaviour.

    Keep launches small (the simulator runs about 10,000 threads per second; tracing adds about
    a third). ``divergence=False`` skips the per-line execution trace (faster).
    """
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
