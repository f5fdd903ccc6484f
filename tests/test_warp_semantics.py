"""Warp intrinsics in the simulator against their documented semantics (PTX ISA: shfl.sync,
vote.sync, match.sync, bar.warp.sync, activemask; CUDA C++ Programming Guide, "Warp Shuffle
Functions" and "Warp Vote Functions") for full warps, partial warps and exited lanes, and the bit
intrinsics against Numba's own simulator (the oracle where it is defined) and their definitions."""

import inspect
import re

import numpy as np
import pytest
from numba import cuda

import gpu_utils as gu

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="tests the simulator's intrinsics")

FULL = 0xFFFFFFFF


ROWS = 11


def existing_lanes(threads: int, warp: int) -> list[int]:
    """Lanes of ``warp`` that exist in a block of ``threads`` threads."""
    return list(range(min(32, threads - 32 * warp)))


def mask_of(lanes) -> int:
    return sum(1 << lane for lane in lanes)


@cuda.jit
def every_intrinsic_with_a_full_mask(x, out):
    i = cuda.threadIdx.x
    v = x[i]
    out[0, i] = cuda.ballot_sync(FULL, v % 3 == 1)
    out[1, i] = cuda.all_sync(FULL, v >= 0)
    out[2, i] = cuda.any_sync(FULL, v % 32 == 5)
    out[3, i] = cuda.match_any_sync(FULL, v // 4)
    out[4, i] = cuda.match_all_sync(FULL, 7)[0]
    out[5, i] = cuda.activemask()
    cuda.syncwarp()  # the default mask names all 32 lanes
    out[6, i] = cuda.shfl_sync(FULL, v, 0)
    out[7, i] = cuda.shfl_up_sync(FULL, v, 1)
    out[8, i] = cuda.eq_sync(FULL, v < 1000)
    cuda.syncwarp(FULL)
    out[9, i] = cuda.shfl_xor_sync(FULL, v, 1)
    out[10, i] = cuda.match_all_sync(FULL, v)[1]


@pytest.mark.parametrize("threads", [10, 32, 40, 64])
def test_lanes_that_do_not_exist_take_no_part_in_full_masks(threads, launch):
    """A block of 10 threads, or the 8-lane last warp of a block of 40: 0xFFFFFFFF and
    syncwarp() name only the lanes that exist (even sizes keep shfl_xor(1) inside the warp)."""
    x = np.arange(threads, dtype=np.int64) * 3 % 50
    out = np.zeros((ROWS, threads), np.int64)
    launch(every_intrinsic_with_a_full_mask, 1, threads, x, out)
    for i in range(threads):
        warp, lane = divmod(i, 32)
        lanes = existing_lanes(threads, warp)
        values = {other: int(x[32 * warp + other]) for other in lanes}
        assert out[0, i] & FULL == mask_of(o for o in lanes if values[o] % 3 == 1)
        assert out[1, i] == 1
        assert out[2, i] == any(values[o] % 32 == 5 for o in lanes)
        assert out[3, i] & FULL == mask_of(o for o in lanes if values[o] // 4 == values[lane] // 4)
        assert out[4, i] & FULL == mask_of(lanes)
        assert out[5, i] & FULL == mask_of(lanes)
        assert out[6, i] == values[0]
        assert out[7, i] == values[lane - 1 if lane else 0]  # lane 0 keeps its own value
        assert out[8, i] == 1
        assert out[9, i] == values[lane ^ 1]
        assert out[10, i] == (len(set(values.values())) == 1)


@cuda.jit
def exits_then_votes(x, out):
    i = cuda.threadIdx.x
    if i % 32 >= 6:  # lanes 6.. of every warp leave before the vote
        return
    out[0, i] = cuda.ballot_sync(FULL, x[i] > 0)
    out[1, i] = cuda.activemask()
    out[2, i] = cuda.match_all_sync(FULL, 1)[0]
    out[3, i] = cuda.shfl_up_sync(FULL, x[i], 1)


@pytest.mark.parametrize("threads", [4, 32, 40])
def test_exited_lanes_and_missing_lanes_alike_vote_nothing(threads, launch):
    x = np.arange(1, threads + 1, dtype=np.int64)
    out = np.zeros((4, threads), np.int64)
    launch(exits_then_votes, 1, threads, x, out)
    for i in range(threads):
        warp, lane = divmod(i, 32)
        if lane >= 6:
            continue
        running = [o for o in existing_lanes(threads, warp) if o < 6]
        assert out[0, i] & FULL == mask_of(running)
        assert out[1, i] & FULL == mask_of(running)
        assert out[2, i] & FULL == mask_of(running)
        assert out[3, i] == x[i - 1 if lane else i]


@cuda.jit
def reads_a_missing_lane(x, out):
    i = cuda.threadIdx.x
    out[i] = cuda.shfl_down_sync(FULL, x[i], 4)


@cuda.jit
def skips_the_shuffle(x, out):
    i = cuda.threadIdx.x
    if i < 20:
        out[i] = cuda.shfl_down_sync(FULL, x[i], 1)
    out[i] += 1  # lanes 20.. skipped the shuffle but are still running here


def test_reading_a_lane_that_does_not_exist_says_so(launch):
    with pytest.raises(gu.warp.WarpError) as error:
        launch(reads_a_missing_lane, 1, 10, np.arange(10.0), np.zeros(10))
    text = str(error.value)
    assert re.search(
        r"reads the value of lane 1[0-3], which does not exist: the block has 10 ", text
    )
    assert "exited" not in text


def test_a_lane_that_skipped_the_shuffle_is_not_said_to_have_exited(launch):
    with pytest.raises(gu.warp.WarpError) as error:
        launch(skips_the_shuffle, 1, 32, np.arange(32.0), np.zeros(32))
    text = str(error.value)
    assert "lane 19 of warp 0 reads the value of lane 20, but lane 20 did not take part" in text
    assert "inside an `if` that the lane skipped" in text
    assert "has exited the kernel" not in text


@cuda.jit
def half_warp_syncwarp(x, out):
    lane = cuda.laneid
    if lane < 16:
        cuda.syncwarp(0x0000FFFF)  # only the lanes in the mask: the others never call it
    out[lane] = x[lane]


def test_syncwarp_waits_only_for_the_lanes_in_its_mask(launch):
    out = np.zeros(32)
    launch(half_warp_syncwarp, 1, 32, np.arange(32.0), out)
    assert list(out) == list(range(32))


# --- bit intrinsics ---------------------------------------------------------------------------

BIT_INTRINSICS = ("popc", "clz", "ffs", "brev")
SAMPLES = [0, 1, 2, 3, 5, 0x80, 0xFF, 0x1234, 0x8000_0000, 0x7FFF_FFFF, 0xFFFF_FFFF, 0xDEAD_BEEF]


def _ours(name):
    return getattr(gu.warp, name)


def _numba(name):
    gu.warp.install()
    return gu.warp.NUMBA_SIMULATOR_INTRINSICS[name]


@pytest.mark.parametrize("name", BIT_INTRINSICS)
@pytest.mark.parametrize("kind", [int, np.uint32])
def test_bit_intrinsics_agree_with_numbas_simulator_on_32_bit_values(name, kind):
    for value in SAMPLES:
        assert _ours(name)(None, kind(value)) == _numba(name)(None, kind(value)), (name, value)


def _definition(name: str, value: int, width: int) -> int:
    bits = value & ((1 << width) - 1)
    if name == "popc":
        return bin(bits).count("1")
    if name == "clz":
        return width - bits.bit_length()
    if name == "ffs":
        return (bits & -bits).bit_length()
    width = max(width, 32)  # brev: __nv_brev / __nv_brevll
    return int(format(bits, f"0{width}b")[::-1], 2)


@pytest.mark.parametrize("name", BIT_INTRINSICS)
@pytest.mark.parametrize(
    "dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
)
def test_bit_intrinsics_use_a_numpy_integers_own_width(name, dtype):
    info = np.iinfo(dtype)
    width = np.dtype(dtype).itemsize * 8
    for value in {0, 1, 6, info.max, info.min, info.max // 3, -1 if info.min < 0 else 7}:
        got = _ours(name)(None, dtype(value))
        assert got == _definition(name, int(value), width), (name, dtype, value)


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("clz", 0, 32),
        ("clz", 3, 30),
        ("clz", -1, 0),  # a negative int32 has its sign bit set
        ("clz", 2**40, 23),  # too big for 32 bits: 64
        ("popc", -1, 32),
        ("popc", 2**40 + 1, 2),
        ("brev", 1, 2**31),
        ("brev", -1, 2**32 - 1),
        ("ffs", 0, 0),
        ("ffs", 2**40, 41),
    ],
)
def test_bit_intrinsics_on_python_ints_are_32_bit_when_they_fit(name, value, expected):
    assert _ours(name)(None, value) == expected


@cuda.jit
def bits_of_the_lane(clz, brev, popc):
    lane = cuda.laneid
    clz[lane] = cuda.clz(lane)
    brev[lane] = cuda.brev(np.uint32(lane))
    popc[lane] = cuda.popc(cuda.ballot_sync(FULL, lane < 31))


def test_bit_intrinsics_inside_a_kernel(launch):
    clz, brev, popc = np.zeros(32, np.int64), np.zeros(32, np.uint32), np.zeros(32, np.int64)
    launch(bits_of_the_lane, 1, 32, clz, brev, popc)
    assert list(clz[:4]) == [32, 31, 30, 30]  # as on a GPU, where laneid is an int32
    assert brev[1] == 2**31 and brev[3] == 2**31 + 2**30
    assert (popc == 31).all()


@cuda.jit
def shuffle_in_a_loop(a, out, n):
    lane = cuda.laneid
    v = 0.0
    for j in range(lane, n, 32):  # n = 70: lanes 0-5 go round 3 times, lanes 6-31 twice
        v += a[j]
        v += cuda.shfl_down_sync(FULL, v, 1)  # in the loop
    for offset in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(FULL, v, offset)  # after the loop
    out[lane] = v


def _line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.py_func)
    (line,) = [first + k for k, source in enumerate(lines) if text in source]
    return line


def test_lanes_meeting_in_different_calls_are_named_with_their_lines(launch):
    with pytest.raises(gu.warp.WarpError) as error:
        launch(shuffle_in_a_loop, 1, 32, np.ones(70), np.zeros(32), 70)
    inside = _line_of(shuffle_in_a_loop, "# in the loop")
    after = _line_of(shuffle_in_a_loop, "# after the loop")
    text = str(error.value)
    assert f"lanes 0-5 at line {inside}; lanes 6-31 at line {after}" in text
    assert "finished the kernel" not in text
    out = np.zeros(32)
    shuffle_in_a_loop[1, 32](np.ones(64), out, 64)  # the same number of rounds in every lane
    assert out[0] > 0
