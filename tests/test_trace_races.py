"""gu.trace's race check on the cases that need care: syncwarp orders only the lanes in its mask
(transitively), a threadfence orders a write for another block only with an atomic whose value is
then tested, accesses of different widths overlap by bytes, and no race hides behind many ordered
accesses. Each racy kernel has a correct counterpart that must show no race."""

import inspect
import linecache
import textwrap

import numpy as np
import pytest
from numba import cuda, float32

import gpu_utils as gu
from gpu_utils.exercises._trace_checks import race_hint

analyze = gu.trace.analyze
FULL = 0xFFFFFFFF


# --- syncwarp(mask) orders the lanes in its mask, and only those ------------------------------


@cuda.jit
def hand_over(x, out, first_mask, second_mask):
    """Lane 0 writes s[0]; two syncwarps with the given masks; lane 1 reads s[0]."""
    s = cuda.shared.array(32, float32)
    lane = cuda.laneid
    if lane == 0:
        s[0] = x[0]
    if first_mask >> lane & 1:
        cuda.syncwarp(first_mask)
    if second_mask >> lane & 1:
        cuda.syncwarp(second_mask)
    if lane == 1:
        out[0] = s[0]


@pytest.mark.parametrize(
    "first, second, racy",
    [
        (0b101, 0, True),  # lane 1 took no part: its syncwarp count differs, yet nothing orders it
        (0b101, 0b100, True),  # two barriers, neither with lane 1
        (0b011, 0, False),  # both lanes in the mask
        (0b101, 0b110, False),  # lane 0 -> lane 2 -> lane 1: ordered through lane 2
        (0b110, 0b101, True),  # the same barriers in the other order order nothing
        (FULL, 0, False),
    ],
)
def test_syncwarp_orders_only_the_lanes_in_its_mask(first, second, racy):
    x = np.ones(1, np.float32)
    report = analyze(hand_over, 1, 32, x, np.zeros(1, np.float32), first, second)
    assert bool(report.races) == racy, report.summary()
    if racy:
        (race,) = report.races
        assert race.element == "s[0]" and race.same_warp
        assert race.threads == ((0, 0, 0), (1, 0, 0))


@cuda.jit
def neighbour_after_syncwarp(x, out, whole):
    s = cuda.shared.array(32, float32)
    lane = cuda.laneid
    s[lane] = x[lane]
    cuda.syncwarp(FULL if whole else 1 << lane)  # 1 << lane: each lane waits for itself only
    out[lane] = s[(lane + 1) % 32]


def test_syncwarp_of_one_lane_orders_nothing_for_its_neighbour():
    x = np.arange(32, dtype=np.float32)
    (race,) = analyze(neighbour_after_syncwarp, 1, 32, x, np.zeros(32, np.float32), False).races
    assert race.kind == "read-write" and race.same_warp and race.addresses == 32
    text = race.describe()
    assert "cuda.syncwarp()" in text and "syncthreads" not in text
    assert "cuda.syncwarp()" in race_hint(race) and "syncthreads" not in race_hint(race)
    assert analyze(neighbour_after_syncwarp, 1, 32, x, np.zeros(32, np.float32), True).races == ()


@cuda.jit
def shift_across_warps(x, out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncwarp()  # orders a warp's lanes, not the two warps
    out[t] = s[(t + 1) % 64]


def test_a_race_that_also_spans_warps_asks_for_syncthreads():
    x = np.arange(64, dtype=np.float32)
    (race,) = analyze(shift_across_warps, 1, 64, x, np.zeros(64, np.float32)).races
    assert not race.same_warp and race.addresses == 2  # s[0] and s[32]
    assert "cuda.syncthreads()" in race.describe() and "syncthreads" in race_hint(race)


@cuda.jit
def shift_without_barrier(x, out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = s[(t + 1) % 64]


def test_a_race_mostly_inside_warps_but_also_across_them_asks_for_syncthreads():
    x = np.arange(64, dtype=np.float32)
    (race,) = analyze(shift_without_barrier, 1, 64, x, np.zeros(64, np.float32)).races
    assert race.addresses == 64
    assert not race.same_warp  # s[0] and s[32] are read by another warp
    assert "cuda.syncthreads()" in race.describe() and "syncwarp" not in race_hint(race)


# --- threadfence orders only together with a tested atomic ------------------------------------


@cuda.jit
def last_block_adds(x, partial, counter, out, fence, test):
    b = cuda.blockIdx.x
    if cuda.threadIdx.x == 0:
        partial[b] = x[b]
        if fence:
            cuda.threadfence()
        ticket = cuda.atomic.add(counter, 0, 1)
        # the correct test reads the ticket; the wrong one assumes the last block finishes last
        last = ticket == cuda.gridDim.x - 1 if test else b == cuda.gridDim.x - 1
        if last:
            total = 0.0
            for k in range(cuda.gridDim.x):
                total += partial[k]
            out[0] = total


@pytest.mark.parametrize(
    "fence, test, racy",
    [(True, True, False), (True, False, True), (False, True, True), (False, False, True)],
)
def test_a_fence_orders_blocks_only_with_a_tested_atomic(fence, test, racy):
    x = np.arange(4, dtype=np.float32)
    args = (x, np.zeros(4, np.float32), np.zeros(1, np.int32), np.zeros(1, np.float32))
    report = analyze(last_block_adds, 4, 32, *args, fence, test)
    assert args[3][0] == 6  # it ran
    assert bool(report.races) == racy, report.summary()
    if racy:
        (race,) = report.races
        assert race.across_blocks and race.array == "partial"


@cuda.jit
def last_block_counts_up(x, partial, counter, out):
    b = cuda.blockIdx.x
    if cuda.threadIdx.x == 0:
        partial[b] = x[b]
        cuda.threadfence()
        done = cuda.atomic.add(counter, 0, 1) + 1  # arithmetic on the ticket, then the test
        if done == cuda.gridDim.x:
            total = 0.0
            for k in range(cuda.gridDim.x):
                total += partial[k]
            out[0] = total


def test_arithmetic_on_the_ticket_before_the_test_still_counts():
    x = np.arange(4, dtype=np.float32)
    args = (x, np.zeros(4, np.float32), np.zeros(1, np.int32), np.zeros(1, np.float32))
    report = analyze(last_block_counts_up, 4, 32, *args)
    assert args[3][0] == 6 and report.races == ()


@cuda.jit
def threadfence_reduction(x, partial, counter, out):
    """The CUDA samples' pattern: thread 0 tests the ticket, a syncthreads shares the verdict."""
    is_last = cuda.shared.array(1, np.int32)
    b, t = cuda.blockIdx.x, cuda.threadIdx.x
    if t == 0:
        partial[b] = x[b]
        cuda.threadfence()
        ticket = cuda.atomic.add(counter, 0, 1)
        is_last[0] = ticket == cuda.gridDim.x - 1
    cuda.syncthreads()
    if is_last[0] and t < cuda.gridDim.x:
        cuda.atomic.add(out, 0, partial[t])


def test_a_tested_ticket_shared_through_syncthreads_orders_the_block():
    x = np.arange(4, dtype=np.float32)
    args = (x, np.zeros(4, np.float32), np.zeros(1, np.int32), np.zeros(1, np.float32))
    report = analyze(threadfence_reduction, 4, 32, *args)
    assert args[3][0] == 6 and report.races == ()


# --- accesses of different widths overlap by bytes --------------------------------------------


@cuda.jit
def two_views(wide, narrow, k):
    i = cuda.grid(1)
    if i == 0:
        wide[0] = 1.0  # bytes 0..7
    if i == 1:
        narrow[k] = 2.0  # bytes 4k..4k+3


def test_a_float64_and_a_float32_view_of_one_buffer_race_where_bytes_overlap():
    buffer = np.zeros(4, np.float64)
    report = analyze(two_views, 1, 32, buffer, buffer.view(np.float32), 1)
    (race,) = report.races
    assert race.kind == "write-write" and race.array == "wide"
    assert race.element == "wide (byte 4)"
    assert analyze(two_views, 1, 32, buffer, buffer.view(np.float32), 2).races == ()


@cuda.jit
def dynamic_views(out, k):
    wide = cuda.shared.array(0, np.float64)
    narrow = cuda.shared.array(0, np.float32)
    t = cuda.threadIdx.x
    if t == 0:
        wide[0] = 1.0
    if t == 1:
        narrow[k] = 2.0
    cuda.syncthreads()
    out[t] = narrow[t]


def test_views_of_dynamic_shared_memory_overlap_by_bytes():
    out = np.zeros(32, np.float32)
    report = analyze(dynamic_views, 1, 32, out, 0, dynamic_shared_bytes=256)
    (race,) = report.races
    assert race.space == "shared" and race.kind == "write-write"
    out = np.zeros(32, np.float32)
    assert analyze(dynamic_views, 1, 32, out, 3, dynamic_shared_bytes=256).races == ()


# --- no race hides behind many ordered accesses -----------------------------------------------


@cuda.jit
def steps_then_race(x, out, steps, last_sync):
    s = cuda.shared.array(32, float32)
    lane = cuda.laneid
    for k in range(steps):
        for _ in range(8):  # many accesses between two syncwarps
            s[lane] = x[lane] + k
        cuda.syncwarp()
        for _ in range(8):
            out[lane] += s[(lane + 1) % 32]
        cuda.syncwarp()
    s[lane] = 0.0
    if last_sync:
        cuda.syncwarp()
    out[lane] = s[(lane + 1) % 32]


def test_a_race_after_many_synchronised_steps_is_found():
    x = np.arange(32, dtype=np.float32)
    # per address 8 x 8 + 1 writes and as many reads: past the old silent cap of 4,096 pairs
    report = analyze(steps_then_race, 1, 32, x, np.zeros(32, np.float32), 8, False)
    (race,) = report.races
    assert race.element.startswith("s[") and race.same_warp and not report.races_cut_short
    report = analyze(steps_then_race, 1, 32, x, np.zeros(32, np.float32), 8, True)
    assert report.races == () and not report.races_cut_short


def test_a_race_check_that_stops_early_says_so(monkeypatch):
    monkeypatch.setattr(gu.trace, "RACE_COMPARISONS_LIMIT", 50)
    x = np.arange(32, dtype=np.float32)
    report = analyze(steps_then_race, 1, 32, x, np.zeros(32, np.float32), 4, True)
    assert report.races_cut_short
    assert "race check cut short after 50 comparisons" in report.summary()


# --- messages use the kernel's own names and never quote an empty line ------------------------

CELL = textwrap.dedent(
    """
    @cuda.jit
    def shift(x, out):
        s = cuda.shared.array(64, float32)
        t = cuda.threadIdx.x
        s[t] = x[t]
        out[t] = s[(t + 1) % 64]
    """
)


def _kernel_from_a_cell(filename: str):
    namespace = {"cuda": cuda, "float32": float32}
    exec(compile(CELL, filename, "exec"), namespace)
    return namespace["shift"]


def test_without_the_source_the_shared_array_keeps_its_name_and_no_quote_is_empty():
    filename = "<ipython-input-unregistered>"
    linecache.cache.pop(filename, None)
    kernel = _kernel_from_a_cell(filename)
    x = np.arange(64, dtype=np.float32)
    races = analyze(kernel, 1, 64, x, np.zeros(64, np.float32)).races
    race = next(r for r in races if r.space == "shared")
    assert race.array == "s" and race.element.startswith("s[")
    text = race.describe()
    assert "``" not in text and "shared array (line" not in text


def test_with_the_source_in_linecache_the_line_is_quoted():
    filename = "<ipython-input-registered>"
    lines = CELL.splitlines(keepends=True)
    linecache.cache[filename] = (len(CELL), None, lines, filename)
    try:
        kernel = _kernel_from_a_cell(filename)
        x = np.arange(64, dtype=np.float32)
        races = analyze(kernel, 1, 64, x, np.zeros(64, np.float32)).races
        race = next(r for r in races if r.space == "shared")
        assert "`out[t] = s[(t + 1) % 64]`" in race.describe()
        assert "line 6 of its cell" in race.describe()
    finally:
        linecache.cache.pop(filename, None)


DIVERGENT_CELL = textwrap.dedent(
    """
    @cuda.jit
    def branchy(out):
        t = cuda.threadIdx.x
        if t % 2 == 0:
            out[t] = 1.0
        else:
            out[t] = 2.0
    """
)


@pytest.mark.parametrize("registered", [False, True])
def test_the_divergence_requirement_quotes_a_line_only_when_it_is_known(registered):
    from gpu_utils.exercises._trace_checks import max_divergent_branches

    filename = f"<ipython-input-divergent-{registered}>"
    linecache.cache.pop(filename, None)
    if registered:
        lines = DIVERGENT_CELL.splitlines(keepends=True)
        linecache.cache[filename] = (len(DIVERGENT_CELL), None, lines, filename)
    try:
        namespace = {"cuda": cuda}
        exec(compile(DIVERGENT_CELL, filename, "exec"), namespace)
        report = analyze(namespace["branchy"], 1, 32, np.zeros(32, np.float32))
        what, _ = max_divergent_branches(0).check(report)
    finally:
        linecache.cache.pop(filename, None)
    assert "1 warps diverged (first at line 5 of its cell" in what
    assert "``" not in what
    assert ("`if t % 2 == 0:`" in what) == registered


# --- a barrier that some threads skip while they go on ----------------------------------------


@cuda.jit
def barrier_inside_the_guard(a, out, n):
    tile = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    if t < n:
        tile[t] = a[t]
        cuda.syncthreads()  # the threads t >= n skip it and go on
    out[t] = tile[63 - t]


@cuda.jit
def early_return_then_barrier(a, out, n):
    tile = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    if t >= n:
        return  # leaves for good: counts as arrived at every later barrier
    tile[t] = a[t]
    cuda.syncthreads()
    out[t] = tile[n - 1 - t]


def _line(kernel, text):
    lines, first = inspect.getsourcelines(kernel.py_func)
    (line,) = [first + k for k, source in enumerate(lines) if text in source]
    return line


def test_a_barrier_skipped_by_threads_that_go_on_is_reported():
    a = np.arange(64, dtype=np.float32)
    report = analyze(barrier_inside_the_guard, 1, 64, a, np.zeros(64, np.float32), 40)
    assert report.divergent_barriers == (_line(barrier_inside_the_guard, "skip it and go on"),)
    report = analyze(barrier_inside_the_guard, 1, 64, a, np.zeros(64, np.float32), 64)
    assert report.divergent_barriers == () and report.races == ()


def test_threads_that_return_before_a_barrier_are_not_reported():
    a = np.arange(64, dtype=np.float32)
    report = analyze(early_return_then_barrier, 1, 64, a, np.zeros(64, np.float32), 40)
    assert report.divergent_barriers == () and report.races == ()
