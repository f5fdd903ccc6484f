"""Warp intrinsics in the simulator (gpu_utils.sim.warp) against hand-computed results, and the clear
errors that replace a GPU's hangs. On a GPU, Numba's real intrinsics run instead."""

import numpy as np
import pytest
from numba import cuda

import gpu_utils as gu

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="tests the simulator's intrinsics")

FULL = 0xFFFFFFFF


# --- shuffles ---------------------------------------------------------------------------------


@cuda.jit
def warp_sum_down(x, out):
    i = cuda.grid(1)
    value = x[i]
    offset = 16
    while offset > 0:
        value += cuda.shfl_down_sync(FULL, value, offset)
        offset //= 2
    out[i] = value


def test_shfl_down_reduction_puts_each_warps_sum_in_lane_0(launch):
    x = np.arange(128, dtype=np.float64)
    (_, out) = launch(warp_sum_down, 2, 64, x, np.zeros(128))
    for warp in range(4):
        assert out[32 * warp] == x[32 * warp : 32 * warp + 32].sum()
    # lane 31 only ever adds its own value (every source lies past the end): 16x its value
    assert out[31] == 31 * 2**5


@cuda.jit
def shuffles(x, idx, up, down, xor):
    i = cuda.grid(1)
    v = x[i]
    idx[i] = cuda.shfl_sync(FULL, v, 37)  # 37 wraps to lane 5
    up[i] = cuda.shfl_up_sync(FULL, v, 3)
    down[i] = cuda.shfl_down_sync(FULL, v, 3)
    xor[i] = cuda.shfl_xor_sync(FULL, v, 5)


def test_each_shuffle_reads_the_lane_the_ptx_rule_names(launch):
    lanes = np.arange(32)
    x = (lanes * 10).astype(np.int64)
    outs = launch(shuffles, 1, 32, x, *(np.zeros(32, np.int64) for _ in range(4)))[1:]
    idx, up, down, xor = outs
    assert (idx == 50).all()
    assert list(up) == [0, 10, 20] + [10 * (lane - 3) for lane in range(3, 32)]
    assert list(down) == [10 * (lane + 3) for lane in range(29)] + [290, 300, 310]
    assert list(xor) == [10 * (lane ^ 5) for lane in range(32)]


@pytest.mark.parametrize(
    "mode, lane, operand, width, source",
    [
        ("down", 5, 4, 8, 5),  # 9 lies in the next segment of 8: own value
        ("down", 2, 4, 8, 6),
        ("up", 9, 2, 8, 9),  # 7 lies in the previous segment: own value
        ("up", 11, 2, 8, 9),
        ("idx", 13, 3, 8, 11),  # lane 3 of the segment 8..15
        ("idx", 13, 35, 32, 3),
        ("bfly", 3, 8, 8, 3),  # xor reaches lane 11, a later segment: own value
        ("bfly", 11, 8, 8, 3),  # an earlier segment may be read
        ("bfly", 6, 1, 32, 7),
    ],
)
def test_shuffle_source_lane_with_width(mode, lane, operand, width, source):
    assert gu.warp.shuffle_source_lane(mode, lane, operand, width) == source


def test_shuffle_source_lane_rejects_bad_arguments():
    with pytest.raises(ValueError, match="power of two"):
        gu.warp.shuffle_source_lane("down", 0, 1, width=12)
    with pytest.raises(ValueError, match="mode"):
        gu.warp.shuffle_source_lane("sideways", 0, 1)


@cuda.jit
def half_warps(x, out):
    lane = cuda.laneid
    if lane < 16:
        out[lane] = cuda.shfl_down_sync(0x0000FFFF, x[lane], 8)
    else:
        out[lane] = cuda.shfl_up_sync(0xFFFF0000, x[lane], 1)


def test_partial_masks_let_two_groups_shuffle_separately(launch):
    x = np.arange(32, dtype=np.float32) + 100
    (_, out) = launch(half_warps, 1, 32, x, np.zeros(32, np.float32))
    assert list(out[:8]) == list(x[8:16])
    # lanes 8..15 would read lanes 16..23, outside the mask (undefined on a GPU): own value here
    assert list(out[8:16]) == list(x[8:16])
    assert out[16] == x[16]  # lane 15 is outside the upper mask
    assert list(out[17:]) == list(x[16:31])


# --- votes and matches ------------------------------------------------------------------------


@cuda.jit
def votes(x, ballot, count, every, some, equal):
    i = cuda.grid(1)
    odd = x[i] % 2 == 1
    ballot[i] = cuda.ballot_sync(FULL, odd)
    count[i] = cuda.popc(cuda.ballot_sync(FULL, True))
    every[i] = cuda.all_sync(FULL, x[i] >= 0)
    some[i] = cuda.any_sync(FULL, x[i] == 7)
    equal[i] = cuda.eq_sync(FULL, odd)


def test_votes_match_hand_computed_masks(launch):
    x = np.arange(32, dtype=np.int64)
    buffers = [np.zeros(32, np.int64) for _ in range(5)]
    ballot, count, every, some, equal = launch(votes, 1, 32, x, *buffers)[1:]
    assert (ballot == np.int32(np.uint32(0xAAAAAAAA).view(np.int32))).all()  # int32, as Numba's
    assert (count == 32).all()  # popc sees all 32 bits of the int32 -1
    assert every.all() and some.all()
    assert not equal.any()


@cuda.jit
def matches(x, any_mask, all_mask, all_pred):
    i = cuda.grid(1)
    any_mask[i] = cuda.match_any_sync(FULL, x[i] % 4)
    mask, same = cuda.match_all_sync(0x0000000F, 1) if i < 4 else (0, False)
    all_mask[i] = mask
    all_pred[i] = same


def test_match_any_and_all(launch):
    x = np.arange(32, dtype=np.int64)
    any_mask, all_mask, all_pred = launch(
        matches, 1, 32, x, np.zeros(32, np.int64), np.zeros(32, np.int64), np.zeros(32, np.bool_)
    )[1:]
    for lane in range(32):  # an int32, as Numba's: compare the bit pattern
        assert int(any_mask[lane]) & FULL == 0x11111111 << (lane % 4)
    assert list(all_mask[:4]) == [0xF] * 4 and all_pred[:4].all()


@cuda.jit
def active_lanes(out, lanes_lt):
    i = cuda.grid(1)
    lanes_lt[i] = cuda.lanemask_lt()
    if cuda.laneid < 20:
        out[i] = cuda.activemask()
    else:
        out[i] = 0


def test_activemask_sees_the_lanes_in_the_same_branch(launch):
    out, lanes_lt = launch(active_lanes, 1, 64, np.zeros(64, np.int64), np.zeros(64, np.int64))
    assert list(out[:20]) == [0xFFFFF] * 20 and list(out[32:52]) == [0xFFFFF] * 20
    assert list(lanes_lt[:32]) == [(1 << lane) - 1 for lane in range(32)]


@cuda.jit
def neighbour_through_shared(x, out):
    buffer = cuda.shared.array(32, np.float32)
    lane = cuda.laneid
    buffer[lane] = x[lane]
    cuda.syncwarp(FULL)
    out[lane] = buffer[(lane + 1) % 32]


def test_syncwarp_orders_shared_memory_within_a_warp(launch):
    x = np.arange(32, dtype=np.float32)
    (_, out) = launch(neighbour_through_shared, 1, 32, x, np.zeros(32, np.float32))
    assert list(out) == list(np.roll(x, -1))


# --- exited lanes take no part in shuffles, votes and matches (PTX ISA) ----------------------


@cuda.jit
def votes_after_early_return(x, out):
    i = cuda.grid(1)
    if i >= 20:
        return
    out[0, i] = cuda.ballot_sync(FULL, x[i] > 4)
    out[1, i] = cuda.any_sync(FULL, x[i] > 18)
    out[2, i] = cuda.all_sync(FULL, x[i] < 20)
    out[3, i] = cuda.match_any_sync(FULL, int(x[i]) // 8)
    out[4, i] = cuda.match_all_sync(FULL, 7)[0]


def test_exited_lanes_vote_nothing_and_match_nothing(launch):
    x = np.arange(32, dtype=np.float32)
    (_, out) = launch(votes_after_early_return, 1, 32, x, np.zeros((5, 32), np.int64))
    assert set(out[0, :20]) == {sum(1 << lane for lane in range(5, 20))}
    assert set(out[1, :20]) == {1} and set(out[2, :20]) == {1}
    assert out[3, 0] == 0xFF and out[3, 19] == sum(1 << lane for lane in range(16, 20))
    assert set(out[4, :20]) == {(1 << 20) - 1}


@cuda.jit
def shuffle_among_running_lanes(x, out):
    i = cuda.grid(1)
    if i >= 20:
        return
    out[i] = cuda.shfl_sync(FULL, x[i], 3)  # every lane reads lane 3, which is running


def test_a_shuffle_that_reads_only_running_lanes_is_fine(launch):
    x = np.arange(32, dtype=np.float32)
    (_, out) = launch(shuffle_among_running_lanes, 1, 32, x, np.zeros(32, np.float32))
    assert list(out[:20]) == [3.0] * 20


# --- mistakes raise instead of hanging --------------------------------------------------------


@cuda.jit
def exited_lane(x, out):
    i = cuda.grid(1)
    if i < 20:
        out[i] = cuda.shfl_down_sync(FULL, x[i], 1)


@cuda.jit
def syncwarp_after_exit(x, out):
    i = cuda.grid(1)
    if i >= 20:
        return
    out[i] = x[i]
    cuda.syncwarp(FULL)  # bar.warp.sync needs every lane of the mask, exited or not


@cuda.jit
def lane_past_block(x, out):
    i = cuda.grid(1)
    out[i] = cuda.shfl_down_sync(FULL, x[i], 1)


@cuda.jit
def not_in_own_mask(x, out):
    i = cuda.grid(1)
    out[i] = cuda.shfl_sync(0x1, x[i], 0)


@cuda.jit
def disagreeing_masks(x, out):
    i = cuda.grid(1)
    mask = 0x3 if i == 0 else 0xFFFFFFFF
    out[i] = cuda.shfl_sync(mask, x[i], 0)


@cuda.jit
def shuffle_versus_syncthreads(x, out):
    i = cuda.grid(1)
    if i == 0:
        cuda.syncthreads()
    else:
        out[i] = cuda.shfl_sync(FULL, x[i], 0)
        cuda.syncthreads()


@pytest.mark.parametrize(
    "kernel, threads, message",
    [
        (exited_lane, 32, "lane 19 of warp 0 reads the value of lane 20, but lane 20 did not"),
        (syncwarp_after_exit, 32, "lane 20 of warp 0 finished the kernel without calling it"),
        (lane_past_block, 48, "lane 16, which does not exist: the block has 48 threads"),
        (not_in_own_mask, 32, "which does not include itself"),
        (disagreeing_masks, 32, "disagree"),
        (shuffle_versus_syncthreads, 32, "is waiting at cuda.syncthreads() instead"),
    ],
)
def test_a_mistake_raises_a_clear_error(kernel, threads, message, launch):
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(gu.warp.WarpError) as error:
        launch(kernel, 1, threads, x, np.zeros(64, np.float32))
    assert message in str(error.value)


@cuda.jit
def index_error_before_shuffle(x, out):
    i = cuda.grid(1)
    v = x[i * 100] if i == 5 else x[i]  # lane 5 reads past the end
    out[i] = cuda.shfl_down_sync(FULL, v, 1)


@pytest.mark.parametrize("traced", [False, True])
def test_a_lane_that_raises_is_reported_and_the_others_stop(traced, launch, monkeypatch):
    from gpu_utils.sim import _trace_run

    monkeypatch.setattr(_trace_run, "forced_engine", launch.engine)  # gu.trace on that engine
    x = np.arange(64, dtype=np.float32)
    args = (x, np.zeros(64, np.float32))
    # numba's simulator names the thread tid=[5, 0, 0]; the course's engine "thread (5, 0, 0)"
    with pytest.raises(IndexError, match=r"tid=\[5, 0, 0\]|thread \(5, 0, 0\) of block"):
        if traced:
            gu.trace.analyze(index_error_before_shuffle, 1, 32, *args)
        else:
            launch(index_error_before_shuffle, 1, 32, *args)


def test_intrinsics_are_installed_and_install_is_idempotent():
    assert gu.warp.installed()
    assert gu.warp.install()
