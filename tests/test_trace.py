"""gu.trace against hand-computed sector, bank-conflict, divergence and race counts.

Sectors are 32 bytes and arrays start 256-byte aligned; a warp is 32 consecutive threads."""

import inspect

import numpy as np
import pytest
from numba import cuda, float32

import gpu_utils as gu

analyze = gu.trace.analyze


def line_with(report, text):
    (stats,) = [s for s in report.lines if text in s.source]
    return stats


# --- global memory: sectors per request -------------------------------------------------------


@cuda.jit
def strided_read(a, out, stride, shift):
    i = cuda.grid(1)
    out[i] = a[i * stride + shift]


@pytest.mark.parametrize(
    "dtype, stride, shift, sectors, efficiency",
    [
        (np.float32, 1, 0, 4, 1.0),  # 32 x 4 B = 128 B = 4 sectors
        (np.float32, 2, 0, 8, 0.5),  # 256 B span, half of it used
        (np.float32, 32, 0, 32, 0.125),  # one sector per thread, 4 of its 32 bytes used
        (np.float32, 1, 1, 5, 0.8),  # shifted by one element: 128 B across 5 sectors
        (np.float64, 1, 0, 8, 1.0),  # 32 x 8 B = 256 B
        (np.float32, 0, 3, 1, 0.125),  # every thread reads a[3]: one sector, 4 useful bytes
    ],
)
def test_load_sectors_per_request(dtype, stride, shift, sectors, efficiency):
    a = np.arange(64 * 32 + 8, dtype=dtype)
    out = np.zeros(64, dtype)
    report = analyze(strided_read, 2, 32, a, out, stride, shift)
    assert report.global_loads.requests == 2  # one load per thread, two warps
    assert report.global_load_sectors_per_request == sectors
    assert report.global_loads.efficiency == pytest.approx(efficiency)
    assert report.global_loads.bytes_moved == 2 * 32 * sectors
    assert report.global_store_sectors_per_request == np.dtype(dtype).itemsize
    np.testing.assert_array_equal(out, a[np.arange(64) * stride + shift])  # it really ran


@cuda.jit
def column_write(a, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[col, row] = a[row, col]


def test_naive_transpose_reads_coalesced_and_writes_strided():
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    out = np.zeros_like(a)
    report = analyze(column_write, (2, 8), (32, 8), a, out)
    assert report.arrays["a"].loads.sectors_per_request == 4
    assert report.arrays["out"].stores.sectors_per_request == 32
    assert report.arrays["out"].stores.requests == 2 * 8 * 8
    np.testing.assert_array_equal(out, a.T)


@cuda.jit
def through_a_row_view(a, out):
    i = cuda.grid(1)
    row = a[1]  # a slice stays traced, offset by one row
    out[i] = row[i]


def test_slices_keep_their_offset():
    a = np.arange(2 * 40, dtype=np.float32).reshape(2, 40)  # row 1 starts at byte 160
    out = np.zeros(32, np.float32)
    report = analyze(through_a_row_view, 1, 32, a, out)
    # bytes 160..287 cover sectors 5..8: 4 sectors (160 is a multiple of 32)
    assert report.arrays["a"].loads.sectors_per_request == 4
    np.testing.assert_array_equal(out, a[1, :32])


# --- shared memory: bank conflicts ------------------------------------------------------------


@cuda.jit
def shared_stride(out, stride):
    buffer = cuda.shared.array(1024, np.float32)
    t = cuda.threadIdx.x
    buffer[t] = t
    cuda.syncthreads()
    out[t] = buffer[(t * stride) % 1024]


@pytest.mark.parametrize(
    "stride, conflicts_per_request",
    [(1, 0), (2, 1), (3, 0), (4, 3), (32, 31), (0, 0)],  # stride 0: one word, a broadcast
)
def test_bank_conflicts_per_request(stride, conflicts_per_request):
    report = analyze(shared_stride, 1, 64, np.zeros(64, np.float32), stride)
    reads = report.arrays["buffer"].loads
    assert reads.requests == 2
    assert reads.bank_conflicts == 2 * conflicts_per_request
    assert report.arrays["buffer"].stores.bank_conflicts == 0
    assert line_with(report, "buffer[(t * stride)").shared_bank_conflicts == reads.bank_conflicts


@cuda.jit
def shared_float64(out):
    buffer = cuda.shared.array(32, np.float64)
    t = cuda.threadIdx.x
    buffer[t] = t
    cuda.syncthreads()
    out[t] = buffer[t]


def test_consecutive_float64_need_two_wavefronts_but_have_no_conflict():
    report = analyze(shared_float64, 1, 32, np.zeros(32))
    assert report.shared_loads.wavefronts == 2 and report.shared_bank_conflicts == 0


TILE = 32


@cuda.jit
def tiled_transpose(a, out, padding):
    tile = cuda.shared.array((32, 33), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x, y = cuda.blockIdx.x * TILE + tx, cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, 8):
        tile[ty + j, tx * (1 + padding) % 33 if padding else tx] = a[y + j, x]
    cuda.syncthreads()
    x, y = cuda.blockIdx.y * TILE + tx, cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, 8):
        out[y + j, x] = tile[tx, (ty + j) * (1 + padding) % 33 if padding else ty + j]


def test_shared_arrays_are_named_and_padding_changes_conflicts():
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    # padding=0 uses columns 0..31 of a 33-wide tile: a column read spans all banks already
    report = analyze(tiled_transpose, 1, (32, 8), a, np.zeros_like(a), 0)
    assert "tile" in report.arrays and report.arrays["tile"].space == "shared"
    assert report.shared_bank_conflicts == 0


@cuda.jit
def tiled_transpose_unpadded(a, out):
    tile = cuda.shared.array((32, 32), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x, y = cuda.blockIdx.x * TILE + tx, cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, 8):
        tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x, y = cuda.blockIdx.y * TILE + tx, cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, 8):
        out[y + j, x] = tile[tx, ty + j]


def test_unpadded_tile_column_reads_are_32_way_conflicts():
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    out = np.zeros_like(a)
    report = analyze(tiled_transpose_unpadded, 1, (32, 8), a, out)
    tile = report.arrays["tile"]
    assert tile.stores.bank_conflicts == 0
    assert tile.loads.requests == 32  # 8 warps x 4 iterations
    assert tile.loads.bank_conflicts == 32 * 31
    assert report.global_load_sectors_per_request == report.global_store_sectors_per_request == 4
    np.testing.assert_array_equal(out, a.T)


# --- divergence -------------------------------------------------------------------------------


@cuda.jit
def branchy(x, out, rule):
    i = cuda.grid(1)
    if i >= x.size:
        return
    lane_even = cuda.threadIdx.x % 2 == 0
    warp_even = (cuda.threadIdx.x // 32) % 2 == 0
    if (rule == 0 and lane_even) or (rule == 1 and warp_even):  # noqa: SIM108 - lines are traced
        v = x[i] * 2
    else:
        v = x[i] + 1
    out[i] = v


@pytest.mark.parametrize(
    "n, rule, divergent",
    [
        (128, 0, 4),  # odd and even lanes part ways in all 4 warps
        (128, 1, 0),  # the branch follows warps: no divergence
        (100, 1, 1),  # the guard splits the last warp (threads 96..99 vs 100..127)
    ],
)
def test_divergent_warps(n, rule, divergent):
    x = np.arange(n, dtype=np.float32)
    report = analyze(branchy, 1, 128, x, np.zeros(n, np.float32), rule)
    assert report.divergent_branches == divergent
    assert sum(s.divergent_branches for s in report.lines) == divergent


# --- races ------------------------------------------------------------------------------------


@cuda.jit
def sum_plain(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[0] += x[i]


@cuda.jit
def sum_atomic(x, out):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, 0, x[i])


def test_plain_add_to_one_address_is_a_read_modify_write_race():
    report = analyze(sum_plain, 1, 64, np.ones(64, np.float32), np.zeros(1, np.float32))
    (race,) = report.races
    assert (race.kind, race.space, race.array, race.index) == (
        "read-modify-write",
        "global",
        "out",
        (0,),
    )
    assert race.threads == ((0, 0, 0), (1, 0, 0)) and race.blocks == ((0, 0, 0), (0, 0, 0))
    assert race.lines[0] == race.lines[1] and race.sources[0] == "out[0] += x[i]"
    assert "read-modify-write race on out[0]" in race.describe()


def test_atomics_do_not_race():
    out = np.zeros(1, np.float32)
    report = analyze(sum_atomic, 2, 64, np.ones(100, np.float32), out)
    assert report.races == () and report.atomics == 4 and out[0] == 100


def test_races_across_blocks_are_found():
    report = analyze(sum_plain, 2, 1, np.ones(2, np.float32), np.zeros(1, np.float32))
    (race,) = report.races
    assert race.across_blocks and race.blocks == ((0, 0, 0), (1, 0, 0))
    assert "threads of different blocks are not ordered" in race.describe()


@cuda.jit
def shift_left(x, out, synchronise):
    buffer = cuda.shared.array(64, np.float32)
    t = cuda.threadIdx.x
    buffer[t] = x[t]
    if synchronise:
        cuda.syncthreads()
    out[t] = buffer[(t + 1) % 64]


def test_missing_syncthreads_is_a_shared_memory_race():
    x = np.arange(64, dtype=np.float32)
    racy = analyze(shift_left, 1, 64, x, np.zeros(64, np.float32), False)
    (race,) = racy.races
    assert (race.kind, race.space, race.array) == ("read-write", "shared", "buffer")
    assert race.addresses == 64  # every element is written by one thread, read by another
    assert analyze(shift_left, 1, 64, x, np.zeros(64, np.float32), True).races == ()


@cuda.jit
def warp_shift(x, out, synchronise):
    buffer = cuda.shared.array(32, np.float32)
    lane = cuda.laneid
    buffer[lane] = x[lane]
    if synchronise:
        cuda.syncwarp()
    out[lane] = buffer[(lane + 1) % 32]


def test_syncwarp_orders_threads_of_one_warp():
    x = np.arange(32, dtype=np.float32)
    assert analyze(warp_shift, 1, 32, x, np.zeros(32, np.float32), True).races == ()
    assert len(analyze(warp_shift, 1, 32, x, np.zeros(32, np.float32), False).races) == 1


@cuda.jit
def last_block_sums(x, partial, counter, out):
    b = cuda.blockIdx.x
    if cuda.threadIdx.x == 0:
        partial[b] = x[b]
        cuda.threadfence()
        ticket = cuda.atomic.add(counter, 0, 1)
        if ticket == cuda.gridDim.x - 1:  # the last block to finish adds up every partial
            total = 0.0
            for k in range(cuda.gridDim.x):
                total += partial[k]
            out[0] = total


def test_threadfence_then_atomic_orders_blocks():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(1, np.float32)
    args = (x, np.zeros(4, np.float32), np.zeros(1, np.int32), out)
    report = analyze(last_block_sums, 4, 32, *args)
    assert report.races == () and out[0] == 6


@cuda.jit
def in_place(a, b):
    i = cuda.grid(1)
    if i < a.size - 1:
        b[i] = a[i + 1]


def test_arguments_sharing_memory_are_one_allocation():
    a = np.arange(65, dtype=np.float32)
    report = analyze(in_place, 1, 64, a, a)  # thread i writes a[i], thread i-1 reads it
    assert list(report.arrays) == ["a"]
    (race,) = report.races
    assert race.kind == "read-write"


# --- the launch itself ------------------------------------------------------------------------


def test_errors_name_the_thread_like_the_simulator():
    pattern = (  # numba-cuda's simulator's words, or the course engine's (GPU_COURSE_SIM=course)
        r"tid=\[\d+, 0, 0\] ctaid=\[0, 0, 0\]: index \d+ is out of bounds for axis 0 with size 64"
        r"|thread \(\d+, 0, 0\) of block \(0, 0, 0\), line \d+: .*\(array `a` of shape \(64,\)\)"
    )
    with pytest.raises(IndexError, match=pattern):
        analyze(strided_read, 1, 32, np.zeros(64, np.float32), np.zeros(32, np.float32), 3, 0)


def test_report_text_summarises_and_tabulates():
    a = np.arange(64, dtype=np.float32)
    report = analyze(strided_read, 2, 32, a, np.zeros(64, np.float32), 1, 0)
    text = str(report)
    assert "Trace of strided_read: grid (2,) x block (32,) = 64 threads in 2 warps." in text
    assert "global loads:  2 requests, 4.00 sectors/request, 256 B moved, efficiency 100%" in text
    assert "races: none found" in text
    assert "out[i] = a[i * stride + shift]" in report.table()


def test_syncthreads_is_cheap_in_the_trace():
    @cuda.jit
    def many_barriers(out):
        for _ in range(50):
            cuda.syncthreads()
        out[cuda.threadIdx.x] = 1

    out = np.zeros(128, np.float32)
    analyze(many_barriers, 1, 128, out, divergence=False)
    assert out.all()


# --- barriers only some threads reach ---------------------------------------------------------


@cuda.jit
def barrier_inside_if(x):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    stride = 32
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
            cuda.syncthreads()  # reached by the threads t < stride only
        stride //= 2
    if t == 0:
        x[0] = s[0]


@cuda.jit
def early_exit_then_barrier(x):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    if t >= 40:
        return  # before any barrier: these threads take no part
    s[t] = x[t]
    cuda.syncthreads()
    x[t] = s[39 - t]


def test_a_barrier_inside_an_if_is_reported_with_its_line():
    report = gu.trace.analyze(barrier_inside_if, 1, 64, np.ones(64, np.float32))
    lines, first = inspect.getsourcelines(barrier_inside_if.py_func)
    (line,) = [first + k for k, text in enumerate(lines) if "reached by the threads" in text]
    assert report.divergent_barriers == (line,)


def test_threads_that_exit_before_every_barrier_are_not_reported():
    report = gu.trace.analyze(early_exit_then_barrier, 1, 64, np.arange(64, dtype=np.float32))
    assert report.divergent_barriers == ()
    assert not report.races


# --- what can be traced -----------------------------------------------------------------------


def test_the_kernels_python_function_can_be_traced_too():
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(32, np.float32)
    report = analyze(strided_read.py_func, 1, 32, a, out, 1, 0)
    assert report.global_load_sectors_per_request == 4 and (out == a[:32]).all()


def test_something_that_is_not_a_kernel_is_refused_with_a_clear_error():
    with pytest.raises(TypeError, match=r"expected a kernel made with @cuda\.jit"):
        analyze(42, 1, 32)


def test_numba_cuda_checks_have_one_home():
    from gpu_utils.sim import _numba_sim, _trace_run, warp

    assert warp.check_numba_cuda_version is _numba_sim.check_numba_cuda_version
    assert _trace_run.require_simulator_internals is _numba_sim.require_simulator_internals
    with pytest.raises(ImportError, match="has no no_such_part: this numba-cuda release"):
        _numba_sim.require_simulator_internals(np, "no_such_part")


@cuda.jit
def compact_positive(x, out, count):
    i = cuda.grid(1)
    if i < x.size and x[i] > 0:
        slot = cuda.atomic.add(count, 0, 1)  # the returned value used as an index
        out[slot] = x[i]


def test_atomic_results_still_behave_as_numbers():
    x = np.array([3, -1, 4, -1, 5, 9, -2, 6], dtype=np.float32)
    out, count = np.zeros(8, np.float32), np.zeros(1, np.int32)
    report = analyze(compact_positive, 1, 8, x, out, count)
    assert count[0] == 5 and sorted(out[:5]) == [3, 4, 5, 6, 9]
    assert report.races == ()
